// Running workflows (shared/workflows): each contact of a running campaign moves through the steps one job at a
// time on the workflow-steps queue (workers/processors/workflow-steps.ts).
//
// Exactly once per step. A job names (campaign, contact, seq, attempt): seq counts the steps the contact has taken,
// attempt the tries of the current one. It acts only while the contact's row is at that seq and attempt, checked
// under the row's lock in the transaction that records the step (workflow_step_runs, keyed by the same four) and
// does its side effect: the SMS message row (acceptSend's `within`) or the call row (placeCall's `within`), and moves
// the contact on. A repeated job (a crash after the commit, a duplicate) finds the row moved on and does nothing but
// make sure the next job exists; a crash before the commit leaves nothing, and BullMQ runs the job again. A job's
// id is deterministic (wf.<campaign>.<contact>.<seq>.<attempt>.<generation>).
//
// A wait sets wake_at of the next step: its job is delayed until then. A call step ends when the call does: the
// workers' call runtime calls onCallEnded after each terminal transition (registered by the workflow-calls service),
// and that service's sweep finishes what a crash in between left (a contact in_call whose call has ended).
import { DelayedError, type Job } from 'bullmq';
import type { Principal } from '../accounts/principal.ts';
import { resolveAgent } from '../calls/agents.ts';
import { isTerminal } from '../calls/model.ts';
import { placeCall } from '../calls/place.ts';
import type { CallRuntime } from '../calls/runtime.ts';
import type { Config } from '../config.ts';
import { isOptedOut } from '../contacts/opt-outs.ts';
import type { Db, Tx } from '../db.ts';
import { DomainError } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import type { Logger } from '../log.ts';
import type { QueueRegistry } from '../queues/registry.ts';
import { SCOPES } from '../scopes.ts';
import { acceptSend, sendQueue } from '../sms/messages.ts';
import { branchTarget, callStepOutcome, render, waitEnds, type Step, type Target } from './steps.ts';

export const WORKFLOW_QUEUE = 'workflow-steps';
export const CONTACT_COMPLETED_EVENT = 'workflow_contact_completed';

export type WorkflowJob =
  | { kind: 'step'; campaignId: string; contactId: string; seq: number; attempt: number; gen: number }
  /** Enqueues the step job of every unfinished contact of the campaign, a page at a time from `after`. */
  | { kind: 'schedule'; campaignId: string; gen: number; after?: string };

export interface EngineDeps { db: Db; queues: QueueRegistry; calls: CallRuntime; config: Config; log: Logger }

export interface StoredPrincipal {
  kind: Principal['kind']; key_id: string; user_id: string | null; is_demo: boolean; allowed_from: string[]; allowed_to: string[];
  /** The sub-entity the creating credential is limited to (absent in workflows stored before it existed: none). */
  sub_entity_id?: string | null;
}

export const storedPrincipal = (p: Principal): StoredPrincipal => ({
  kind: p.kind, key_id: p.keyId, user_id: p.userId, is_demo: p.isDemo, allowed_from: [...p.allowedFrom], allowed_to: [...p.allowedTo],
  sub_entity_id: p.subEntityId ?? null,
});

function principalOf(orgId: string, s: StoredPrincipal): Principal {
  return {
    kind: s.kind, keyId: s.key_id, organizationId: orgId, userId: s.user_id, scopes: new Set(SCOPES), isDemo: s.is_demo,
    allowedFrom: s.allowed_from, allowedTo: s.allowed_to, subEntityId: s.sub_entity_id ?? null, rateLimit: 0,
  };
}

export type ContactState = 'pending' | 'active' | 'waiting' | 'in_call' | 'completed' | 'cancelled';
const RUNNABLE: ContactState[] = ['pending', 'active', 'waiting'];

interface Loaded {
  campaign_id: string; contact_id: string; organization_id: string; phone_number: string; state: ContactState;
  step_index: number; seq: number; attempt: number; wake_at: Date | null; last_outcome: string | null; call_id: string | null;
  campaign_status: string; generation: number; workflow_id: string; steps: Step[]; from_number: string; principal: StoredPrincipal;
  contact_name: string; contact_timezone: string | null;
}

const LOAD = `SELECT wc.*, ca.status AS campaign_status, ca.generation, ca.workflow_id, w.steps, w.from_number, w.principal,
                     ct.name AS contact_name, ct.timezone AS contact_timezone
                FROM workflow_contacts wc JOIN workflow_campaigns ca ON ca.id = wc.campaign_id
                JOIN workflows w ON w.id = ca.workflow_id JOIN contacts ct ON ct.id = wc.contact_id`;

class Stale extends Error {}

export const stepJobId = (campaignId: string, contactId: string, seq: number, attempt: number, gen: number) =>
  `wf.${campaignId}.${contactId}.${seq}.${attempt}.${gen}`;

const JOB_OPTS = { attempts: 20, backoff: { type: 'exponential', delay: 500 }, removeOnComplete: { age: 3600, count: 100_000 }, removeOnFail: { age: 7 * 86400 } };

export interface StepRef { campaignId: string; contactId: string; seq: number; attempt: number; wakeAt: Date | null }

export async function enqueueSteps(queues: QueueRegistry, refs: StepRef[], gen: number): Promise<void> {
  if (!refs.length) return;
  const now = Date.now();
  await queues.get<WorkflowJob>(WORKFLOW_QUEUE).addBulk(refs.map((r) => ({
    name: 'step',
    data: { kind: 'step' as const, campaignId: r.campaignId, contactId: r.contactId, seq: r.seq, attempt: r.attempt, gen },
    opts: { ...JOB_OPTS, jobId: stepJobId(r.campaignId, r.contactId, r.seq, r.attempt, gen), delay: r.wakeAt ? Math.max(0, r.wakeAt.getTime() - now) : 0 },
  })));
}

export async function enqueueSchedule(queues: QueueRegistry, campaignId: string, gen: number, after?: string): Promise<void> {
  await queues.get<WorkflowJob>(WORKFLOW_QUEUE).add('schedule', { kind: 'schedule', campaignId, gen, after },
    { ...JOB_OPTS, jobId: `wfsched.${campaignId}.${gen}.${after ?? 'first'}` });
}

export const SCHEDULE_PAGE = 1000;

/** One page of a campaign's scheduling: the step jobs of up to SCHEDULE_PAGE unfinished contacts (not in a call),
 *  then the next page's job. Repeating a page enqueues the same job ids. */
export async function schedulePage(d: EngineDeps, j: Extract<WorkflowJob, { kind: 'schedule' }>): Promise<number> {
  const camp = await d.db.oneOrNone<{ status: string; generation: number }>('SELECT status, generation FROM workflow_campaigns WHERE id = $1', [j.campaignId]);
  if (!camp || camp.status !== 'running' || camp.generation !== j.gen) return 0;
  const rows = await d.db.any<{ contact_id: string; seq: number; attempt: number; wake_at: Date | null }>(
    `SELECT contact_id, seq, attempt, wake_at FROM workflow_contacts
      WHERE campaign_id = $1 AND state IN ('pending', 'active', 'waiting') AND ($2::uuid IS NULL OR contact_id > $2)
      ORDER BY contact_id LIMIT $3`, [j.campaignId, j.after ?? null, SCHEDULE_PAGE]);
  await enqueueSteps(d.queues, rows.map((r) => ({ campaignId: j.campaignId, contactId: r.contact_id, seq: r.seq, attempt: r.attempt, wakeAt: r.wake_at })), j.gen);
  if (rows.length === SCHEDULE_PAGE) await enqueueSchedule(d.queues, j.campaignId, j.gen, rows[rows.length - 1].contact_id);
  return rows.length;
}

/** Locks the contact's row and checks that it is still at the job's step; records the step (its unique key). */
async function claim(tx: Tx, c: Loaded, run: { status: string; outcome?: string | null; ref?: string | null; detail?: string | null }): Promise<void> {
  const cur = await tx.oneOrNone<{ seq: number; attempt: number; state: ContactState }>(
    'SELECT seq, attempt, state FROM workflow_contacts WHERE campaign_id = $1 AND contact_id = $2 FOR UPDATE', [c.campaign_id, c.contact_id]);
  if (!cur || cur.seq !== c.seq || cur.attempt !== c.attempt || !RUNNABLE.includes(cur.state)) throw new Stale();
  const done = run.status !== 'started';
  const ins = await tx.result(
    `INSERT INTO workflow_step_runs (campaign_id, contact_id, seq, attempt, step_index, type, status, outcome, ref_id, detail, finished_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $11 THEN clock_timestamp() END) ON CONFLICT DO NOTHING`,
    [c.campaign_id, c.contact_id, c.seq, c.attempt, c.step_index, c.steps[c.step_index].type, run.status, run.outcome ?? null,
      run.ref ?? null, run.detail ?? null, done]);
  if (ins.rowCount === 0) throw new Stale();
}

type Next = StepRef | null;

/** Moves the contact to step `to` (or finishes it at 'end' or past the last step). */
async function advance(tx: Tx, c: Loaded, to: Target, o: { outcome?: string | null; wakeAt?: Date | null; waitReason?: string | null; seqOf?: number }): Promise<Next> {
  const outcome = o.outcome === undefined ? c.last_outcome : o.outcome;
  if (to === 'end' || to >= c.steps.length) {
    await finish(tx, c, 'completed', outcome ?? 'completed');
    return null;
  }
  const seq = (o.seqOf ?? c.seq) + 1;
  await tx.none(
    `UPDATE workflow_contacts SET step_index = $3, seq = $4, attempt = 0, state = $5, wake_at = $6, wait_reason = $7, last_outcome = $8,
            call_id = NULL, updated_at = now() WHERE campaign_id = $1 AND contact_id = $2`,
    [c.campaign_id, c.contact_id, to, seq, o.wakeAt ? 'waiting' : 'active', o.wakeAt ?? null, o.waitReason ?? null, outcome]);
  return { campaignId: c.campaign_id, contactId: c.contact_id, seq, attempt: 0, wakeAt: o.wakeAt ?? null };
}

/** The payload of workflow_contact_completed. */
async function completedEvent(tx: Tx, c: { campaign_id: string; contact_id: string; workflow_id: string; phone_number: string; organization_id: string },
  outcome: string, reason: string): Promise<void> {
  const steps = await tx.any<{ seq: number; step_index: number; type: string; outcome: string | null; ref_id: string | null; finished_at: Date | null }>(
    `SELECT seq, step_index, type, outcome, ref_id, finished_at FROM workflow_step_runs
      WHERE campaign_id = $1 AND contact_id = $2 AND status = 'done' ORDER BY seq, attempt`, [c.campaign_id, c.contact_id]);
  await recordEvent(tx, {
    organizationId: c.organization_id, eventType: CONTACT_COMPLETED_EVENT,
    data: {
      workflow_id: c.workflow_id, task_id: c.workflow_id, campaign_id: c.campaign_id, contact_id: c.contact_id, phone_number: c.phone_number,
      outcome, finished_reason: reason,
      steps: steps.map((s) => ({ step: s.step_index, type: s.type, outcome: s.outcome, ref_id: s.ref_id, at: s.finished_at?.toISOString() ?? null })),
    },
  });
}

async function finish(tx: Tx, c: Loaded, state: 'completed' | 'cancelled', outcome: string): Promise<void> {
  await tx.none(
    `UPDATE workflow_contacts SET state = $3, outcome = $4, finished_at = now(), wake_at = NULL, wait_reason = NULL, updated_at = now()
      WHERE campaign_id = $1 AND contact_id = $2`, [c.campaign_id, c.contact_id, state, outcome]);
  await completedEvent(tx, c, outcome, outcome === 'opted_out' ? 'opted_out' : 'end');
}

const OPTED_OUT_CODES = new Set(['recipient_opted_out', 'dnc_suppressed']);
/** Call placement refusals that pass: the step is tried again when they say (never a failure). */
const RETRY_CODES = new Set(['outside_call_window', 'day_not_allowed', 'frequency_exceeded', 'rate_limited', 'channel_limit_exceeded', 'spend_cap_reached']);

function retryAt(err: DomainError, scale: number): Date {
  const next = err.fields?.next_allowed_at ? Date.parse(err.fields.next_allowed_at) : NaN;
  if (Number.isFinite(next)) return new Date(next);
  if (err.code === 'spend_cap_reached') {
    const d = new Date(); return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1));
  }
  const s = err.retryAfterSeconds ?? 5;
  return new Date(Date.now() + Math.max(200, s * 1000 * (err.code === 'channel_limit_exceeded' ? scale : 1)));
}

export type StepResult = string | { delayUntil: number };

/** Runs the step a job names (see the top of this file). */
export async function runStep(d: EngineDeps, j: Extract<WorkflowJob, { kind: 'step' }>): Promise<StepResult> {
  const c = await d.db.oneOrNone<Loaded>(`${LOAD} WHERE wc.campaign_id = $1 AND wc.contact_id = $2`, [j.campaignId, j.contactId]);
  if (!c) return 'gone';
  if (c.seq !== j.seq || c.attempt !== j.attempt) {
    // This job's step is done: its successor may not be enqueued yet (a crash between the commit and the enqueue).
    const successor = (c.seq === j.seq && c.attempt === j.attempt + 1) || (c.seq === j.seq + 1 && c.attempt === 0);
    if (successor && c.campaign_status === 'running' && RUNNABLE.includes(c.state)) {
      await enqueueSteps(d.queues, [{ campaignId: c.campaign_id, contactId: c.contact_id, seq: c.seq, attempt: c.attempt, wakeAt: c.wake_at }], j.gen);
    }
    return 'stale';
  }
  if (c.campaign_status !== 'running') return `held:${c.campaign_status}`;
  if (!RUNNABLE.includes(c.state)) return `not_runnable:${c.state}`;
  if (c.wake_at && c.wake_at.getTime() > Date.now()) return { delayUntil: c.wake_at.getTime() };
  let next: Next = null;
  let finished = false;
  const tx = async (fn: (tx: Tx) => Promise<void>) => d.db.tx('workflow-step', fn);
  const step = c.steps[c.step_index];
  try {
    switch (step.type) {
      case 'wait': {
        const w = waitEnds(step, Date.now(), d.config.sandboxTimeScale, c.contact_timezone);
        await tx(async (t) => {
          await claim(t, c, { status: 'done', detail: `until ${new Date(w.at).toISOString()}${w.zone ? ` (${w.zone})` : ''}` });
          next = await advance(t, c, c.step_index + 1, { wakeAt: new Date(w.at), waitReason: 'wait' });
          finished = next === null;
        });
        break;
      }
      case 'branch': {
        const facts = await branchFacts(d.db, c);
        const b = branchTarget(step, c.step_index, c.last_outcome, facts);
        await tx(async (t) => {
          await claim(t, c, { status: 'done', outcome: b.matched, detail: `to ${b.to}` });
          if (b.matched === 'opted_out' && b.to === 'end') { await finish(t, c, 'completed', 'opted_out'); finished = true; return; }
          next = await advance(t, c, b.to, {});
          finished = next === null;
        });
        break;
      }
      case 'sms': {
        const p = principalOf(c.organization_id, c.principal);
        try {
          await acceptSend(d.db, sendQueue(d.queues), p,
            { from_number: c.from_number, to_number: c.phone_number, body: render(step.body, { name: c.contact_name, phone_number: c.phone_number }) },
            async (t, m) => {
              await claim(t, c, { status: 'done', outcome: 'sent', ref: m.id });
              next = await advance(t, c, c.step_index + 1, { outcome: 'sent' });
              finished = next === null;
            });
        } catch (err) {
          if (!(err instanceof DomainError)) throw err;
          ({ next, finished } = await refused(d, c, err, false));
        }
        break;
      }
      case 'call': {
        const p = principalOf(c.organization_id, c.principal);
        try {
          const agent = step.agent_id ? await resolveAgent(d.db, p, step.agent_id, undefined) : undefined;
          await placeCall(d.calls, p, {
            type: agent ? 'ai' : 'bridge', from: c.from_number, to: c.phone_number, connect: step.connect_number, agent,
            record: step.record ?? false, names: { from: 'from_number', to: 'to_number' },
          }, async (t, placed) => {
            await claim(t, c, { status: 'started', ref: placed.call.id });
            await t.none(`UPDATE workflow_contacts SET state = 'in_call', call_id = $3, wake_at = NULL, wait_reason = NULL, updated_at = now()
                           WHERE campaign_id = $1 AND contact_id = $2`, [c.campaign_id, c.contact_id, placed.call.id]);
          });
        } catch (err) {
          if (!(err instanceof DomainError)) throw err;
          ({ next, finished } = await refused(d, c, err, true));
        }
        break;
      }
    }
  } catch (err) {
    if (err instanceof Stale || (err as { code?: string }).code === '23505') return 'stale';
    throw err;
  }
  if (finished) wakeRelay(d.db);
  if (next) await enqueueSteps(d.queues, [next], j.gen);
  return step.type;
}

/** A refused SMS or call: opted out stops the contact; a call that may be placed later waits (a closed calling
 *  window never fails a contact); anything else is the step's outcome failed, and the workflow goes on. */
async function refused(d: EngineDeps, c: Loaded, err: DomainError, isCall: boolean): Promise<{ next: Next; finished: boolean }> {
  let next: Next = null;
  let finished = false;
  await d.db.tx('workflow-step-refused', async (t) => {
    if (OPTED_OUT_CODES.has(err.code)) {
      await claim(t, c, { status: 'done', outcome: 'opted_out', detail: err.code });
      await finish(t, c, 'completed', 'opted_out');
      finished = true;
    } else if (isCall && RETRY_CODES.has(err.code)) {
      const at = retryAt(err, d.config.sandboxTimeScale);
      await claim(t, c, { status: 'retry', detail: `${err.code}: tried again at ${at.toISOString()}` });
      await t.none(`UPDATE workflow_contacts SET attempt = attempt + 1, state = 'waiting', wake_at = $3, wait_reason = $4, updated_at = now()
                     WHERE campaign_id = $1 AND contact_id = $2`, [c.campaign_id, c.contact_id, at, err.code === 'outside_call_window' || err.code === 'day_not_allowed' ? 'call_window' : err.code]);
      next = { campaignId: c.campaign_id, contactId: c.contact_id, seq: c.seq, attempt: c.attempt + 1, wakeAt: at };
    } else {
      await claim(t, c, { status: 'done', outcome: 'failed', detail: `${err.code}: ${err.message}` });
      next = await advance(t, c, c.step_index + 1, { outcome: 'failed' });
      finished = next === null;
    }
  });
  return { next, finished };
}

/** What a branch reads besides the previous outcome: whether the contact texted the workflow's number since the
 *  last SMS step, and whether it opted out (either channel). */
async function branchFacts(db: Db, c: Loaded): Promise<{ replied: boolean; optedOut: boolean }> {
  const r = await db.one<{ replied: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM sms_messages m WHERE m.organization_id = $1 AND m.direction = 'inbound' AND m.remote_number = $2
               AND m.local_number = $3 AND m.created_at > COALESCE((SELECT max(started_at) FROM workflow_step_runs
                   WHERE campaign_id = $4 AND contact_id = $5 AND type = 'sms' AND status = 'done'), '-infinity'))
            AND EXISTS (SELECT 1 FROM workflow_step_runs WHERE campaign_id = $4 AND contact_id = $5 AND type = 'sms' AND status = 'done') AS replied`,
    [c.organization_id, c.phone_number, c.from_number, c.campaign_id, c.contact_id]);
  const optedOut = await isOptedOut(db, c.organization_id, c.phone_number, 'sms') || await isOptedOut(db, c.organization_id, c.phone_number, 'call');
  return { replied: r.replied, optedOut };
}

/** A call of a workflow ended: its step is done with the call's outcome, and the contact moves on. Idempotent;
 *  a call of no workflow costs one indexed read. */
export async function onCallEnded(d: EngineDeps, callId: string): Promise<boolean> {
  let next: Next = null;
  let finished = false;
  let gen = 0;
  const applied = await d.db.tx('workflow-call-ended', async (t) => {
    const c = await t.oneOrNone<Loaded>(`${LOAD} WHERE wc.call_id = $1 AND wc.state = 'in_call' FOR UPDATE OF wc`, [callId]);
    if (!c) return false;
    const call = await t.oneOrNone<{ status: string; call_outcome: string | null }>('SELECT status, call_outcome FROM calls WHERE id = $1', [callId]);
    if (!call || !isTerminal(call.status)) return false;
    const outcome = callStepOutcome(call.status, call.call_outcome);
    await t.none(`UPDATE workflow_step_runs SET status = 'done', outcome = $5, finished_at = clock_timestamp()
                   WHERE campaign_id = $1 AND contact_id = $2 AND seq = $3 AND attempt = $4`, [c.campaign_id, c.contact_id, c.seq, c.attempt, outcome]);
    gen = c.generation;
    next = await advance(t, c, c.step_index + 1, { outcome });
    finished = next === null;
    return true;
  });
  if (finished) wakeRelay(d.db);
  if (next && applied) await enqueueSteps(d.queues, [next], gen);
  return applied;
}

/** Repairs what a crash can leave: contacts in_call whose call has ended (the hook did not run), contacts due for
 *  30 s whose job is gone (a crash between a commit and its enqueue), running campaigns whose contacts all finished. */
export async function sweep(d: EngineDeps): Promise<{ calls: number; requeued: number; completed: number }> {
  const ended = await d.db.any<{ call_id: string }>(
    `SELECT wc.call_id FROM workflow_contacts wc JOIN calls c ON c.id = wc.call_id
      WHERE wc.state = 'in_call' AND c.status IN ('COMPLETED', 'BUSY', 'NO_ANSWER', 'VOICEMAIL', 'FAILED', 'CANCELED') LIMIT 500`);
  for (const r of ended) await onCallEnded(d, r.call_id);
  const due = await d.db.any<{ campaign_id: string; contact_id: string; seq: number; attempt: number; generation: number }>(
    `SELECT wc.campaign_id, wc.contact_id, wc.seq, wc.attempt, ca.generation FROM workflow_contacts wc
       JOIN workflow_campaigns ca ON ca.id = wc.campaign_id AND ca.status = 'running'
      WHERE wc.state IN ('active', 'waiting') AND wc.updated_at < now() - interval '30 seconds'
        AND (wc.wake_at IS NULL OR wc.wake_at < now() - interval '30 seconds') LIMIT 1000`);
  for (const r of due) {
    await enqueueSteps(d.queues, [{ campaignId: r.campaign_id, contactId: r.contact_id, seq: r.seq, attempt: r.attempt, wakeAt: null }], r.generation);
  }
  const done = await d.db.result(
    `UPDATE workflow_campaigns ca SET status = 'completed', completed_at = now(), updated_at = now()
      WHERE ca.status = 'running' AND NOT EXISTS (SELECT 1 FROM workflow_contacts wc WHERE wc.campaign_id = ca.id
        AND wc.state IN ('pending', 'active', 'waiting', 'in_call'))`);
  return { calls: ended.length, requeued: due.length, completed: done.rowCount };
}

/** The processor's body: a step, or a page of scheduling. */
export async function processWorkflowJob(d: EngineDeps, job: Job<WorkflowJob>, token?: string): Promise<unknown> {
  const j = job.data;
  if (j.kind === 'schedule') return { scheduled: await schedulePage(d, j) };
  const r = await runStep(d, j);
  if (typeof r === 'object') {
    await job.moveToDelayed(r.delayUntil, token);
    throw new DelayedError();
  }
  return { result: r };
}


