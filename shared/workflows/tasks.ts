// Tasks (/v1/tasks): a workflow and its campaign, made together; starting, pausing, resuming and cancelling the
// campaign; reading progress and each contact's state and step history. The engine is shared/workflows/engine.ts.
import type { Principal } from '../accounts/principal.ts';
import type { Db, Tx, WithinTx } from '../db.ts';
import { notFound, stateConflict, validationError } from '../errors.ts';
import { wakeRelay } from '../events/outbox.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import { isE164 } from '../phone/e164.ts';
import type { QueueRegistry } from '../queues/registry.ts';
import { assertWithinBounds } from '../tokens/bounds.ts';
import { CONTACT_COMPLETED_EVENT, enqueueSchedule, storedPrincipal, type ContactState } from './engine.ts';
import { checkSteps, type Step } from './steps.ts';

export const TASK_STATUSES = ['draft', 'running', 'paused', 'cancelled', 'completed'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const CONTACT_STATES = ['pending', 'active', 'waiting', 'in_call', 'completed', 'cancelled'] as const;
export const MAX_CONTACT_IDS = 10_000;
export const MAX_CAMPAIGN_CONTACTS = 200_000;

export interface NewTask {
  name: string; from_number: string; steps: Step[]; contact_ids?: string[];
  contact_filter?: { tag?: string; sub_entity_id?: string }; start?: boolean;
}

export interface TaskRow {
  id: string; organization_id: string; name: string; from_number: string; steps: Step[]; created_at: Date; updated_at: Date;
  campaign_id: string; status: TaskStatus; contact_count: number; started_at: Date | null; completed_at: Date | null; cancelled_at: Date | null;
  progress?: Record<string, number>; outcomes?: Record<string, number>;
}

const SELECT_TASK = `SELECT w.id, w.organization_id, w.name, w.from_number, w.steps, w.created_at, GREATEST(w.updated_at, ca.updated_at) AS updated_at,
       ca.id AS campaign_id, ca.status, ca.contact_count, ca.started_at, ca.completed_at, ca.cancelled_at
  FROM workflows w JOIN workflow_campaigns ca ON ca.workflow_id = w.id`;

export async function createTask(db: Db, queues: QueueRegistry, p: Principal, req: NewTask, within?: WithinTx<TaskRow>): Promise<TaskRow> {
  const bad: Record<string, string> = {};
  if (!isE164(req.from_number)) bad.from_number = 'must be an E.164 number, e.g. +14155550123';
  if ((req.contact_ids === undefined) === (req.contact_filter === undefined)) bad.contact_ids = 'give contact_ids or contact_filter, one of them';
  req.contact_ids?.forEach((id, i) => { if (!isUuid(id)) bad[`contact_ids[${i}]`] = 'is not a contact id'; });
  if (req.contact_ids && new Set(req.contact_ids).size !== req.contact_ids.length) bad.contact_ids = 'lists a contact more than once';
  if (req.contact_filter?.sub_entity_id !== undefined && !isUuid(req.contact_filter.sub_entity_id)) bad['contact_filter.sub_entity_id'] = 'is not a sub-entity id';
  if (Object.keys(bad).length) throw validationError(bad);
  checkSteps(req.steps);
  assertWithinBounds(p, ['from_number', req.from_number], []);
  const id = uuidv7();
  const campaignId = uuidv7();
  const start = req.start === true;
  const row = await db.tx('task-create', async (tx) => {
    const num = await tx.oneOrNone(`SELECT 1 FROM phone_numbers WHERE organization_id = $1 AND phone_number = $2 AND status <> 'RELEASED'
                                     UNION ALL SELECT 1 FROM caller_ids WHERE organization_id = $1 AND phone_number = $2 AND removed_at IS NULL LIMIT 1`,
    [p.organizationId, req.from_number]);
    if (!num) throw validationError({ from_number: 'is not a number of your organization (GET /v1/phone-numbers)' });
    const agents = req.steps.flatMap((s, i) => (s.type === 'call' && s.agent_id ? [[i, s.agent_id] as const] : []));
    for (const [i, agentId] of agents) {
      const a = isUuid(agentId) ? await tx.oneOrNone('SELECT 1 FROM agents WHERE id = $1 AND organization_id = $2', [agentId, p.organizationId]) : null;
      if (!a) throw validationError({ [`steps[${i}].agent_id`]: 'is not an agent of your organization (GET /v1/agents)' });
    }
    await tx.none(`INSERT INTO workflows (id, organization_id, name, from_number, steps, principal) VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb)`,
      [id, p.organizationId, req.name, req.from_number, JSON.stringify(req.steps), JSON.stringify(storedPrincipal(p))]);
    await tx.none(`INSERT INTO workflow_campaigns (id, workflow_id, organization_id, status, generation, contact_count, started_at)
                   VALUES ($1, $2, $3, $4, $5, 0, $6)`, [campaignId, id, p.organizationId, start ? 'running' : 'draft', start ? 1 : 0, start ? new Date() : null]);
    let n: number;
    if (req.contact_ids) {
      n = (await tx.result(`INSERT INTO workflow_contacts (campaign_id, contact_id, organization_id, phone_number, state)
                            SELECT $1, c.id, c.organization_id, c.phone_number, 'pending' FROM contacts c
                             WHERE c.organization_id = $2 AND c.deleted_at IS NULL AND c.id = ANY($3::uuid[])`,
      [campaignId, p.organizationId, req.contact_ids])).rowCount;
      if (n !== req.contact_ids.length) {
        const found = new Set((await tx.any<{ contact_id: string }>('SELECT contact_id FROM workflow_contacts WHERE campaign_id = $1', [campaignId])).map((r) => r.contact_id));
        const missing: Record<string, string> = {};
        req.contact_ids.forEach((c, i) => { if (!found.has(c) && Object.keys(missing).length < 20) missing[`contact_ids[${i}]`] = 'is not a contact of your organization'; });
        throw validationError(missing);
      }
    } else {
      const f = req.contact_filter!;
      n = (await tx.result(`INSERT INTO workflow_contacts (campaign_id, contact_id, organization_id, phone_number, state)
                            SELECT $1, c.id, c.organization_id, c.phone_number, 'pending' FROM contacts c
                             WHERE c.organization_id = $2 AND c.deleted_at IS NULL AND ($3::text IS NULL OR $3 = ANY(c.tags))
                               AND ($4::uuid IS NULL OR c.sub_entity_id = $4) LIMIT $5`,
      [campaignId, p.organizationId, f.tag ?? null, f.sub_entity_id ?? null, MAX_CAMPAIGN_CONTACTS + 1])).rowCount;
      if (n === 0) throw validationError({ contact_filter: 'matches no contacts' });
      if (n > MAX_CAMPAIGN_CONTACTS) throw validationError({ contact_filter: `matches more than ${MAX_CAMPAIGN_CONTACTS} contacts` });
    }
    await tx.none('UPDATE workflow_campaigns SET contact_count = $2 WHERE id = $1', [campaignId, n]);
    const r = await tx.one<TaskRow>(`${SELECT_TASK} WHERE w.id = $1`, [id]);
    if (within) await within(tx, r);
    return r;
  });
  if (start) await enqueueSchedule(queues, campaignId, 1);
  return row;
}

export async function getTask(db: Db | Tx, orgId: string, id: string, withProgress = true): Promise<TaskRow> {
  const row = isUuid(id) ? await db.oneOrNone<TaskRow>(`${SELECT_TASK} WHERE w.id = $1 AND w.organization_id = $2`, [id, orgId]) : null;
  if (!row) throw notFound(`Task ${id}`);
  if (withProgress) await addProgress(db, row);
  return row;
}

async function addProgress(db: Db | Tx, row: TaskRow): Promise<void> {
  const rows = await db.any<{ state: ContactState; outcome: string | null; n: number }>(
    'SELECT state, outcome, count(*)::int AS n FROM workflow_contacts WHERE campaign_id = $1 GROUP BY 1, 2', [row.campaign_id]);
  const progress: Record<string, number> = Object.fromEntries(CONTACT_STATES.map((s) => [s, 0]));
  const outcomes: Record<string, number> = {};
  for (const r of rows) {
    progress[r.state] += r.n;
    if (r.outcome) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + r.n;
  }
  row.progress = progress;
  row.outcomes = outcomes;
  // Completed once every contact finished (the workers' sweep does the same without a reader).
  if (row.status === 'running' && progress.pending + progress.active + progress.waiting + progress.in_call === 0) {
    const done = await db.oneOrNone<{ completed_at: Date }>(
      `UPDATE workflow_campaigns SET status = 'completed', completed_at = now(), updated_at = now() WHERE id = $1 AND status = 'running' RETURNING completed_at`, [row.campaign_id]);
    if (done) { row.status = 'completed'; row.completed_at = done.completed_at; }
  }
}

export async function listTasks(db: Db, orgId: string, p: PageParams, status?: TaskStatus): Promise<TaskRow[]> {
  const k = keysetClause('w.id', p, 3);
  const rows = await db.any<TaskRow>(`${SELECT_TASK} WHERE w.organization_id = $1 AND ($2::text IS NULL OR ca.status = $2)${k.where}${k.tail}`,
    [orgId, status ?? null, ...k.values]);
  for (const r of rows) await addProgress(db, r);
  return rows;
}

/** PATCH /v1/tasks/{id}: name, and status running (start or resume), paused or cancelled. */
export async function changeTask(db: Db, queues: QueueRegistry, orgId: string, id: string, req: { name?: string; status?: 'running' | 'paused' | 'cancelled' },
  within?: WithinTx<TaskRow>): Promise<TaskRow> {
  let schedule: { campaignId: string; gen: number } | null = null;
  let cancelled = 0;
  const row = await db.tx('task-change', async (tx) => {
    const cur = await getTask(tx, orgId, id, false);
    await tx.one('SELECT 1 FROM workflow_campaigns WHERE id = $1 FOR UPDATE', [cur.campaign_id]);
    const { status } = await tx.one<{ status: TaskStatus }>('SELECT status FROM workflow_campaigns WHERE id = $1', [cur.campaign_id]);
    if (req.name !== undefined) await tx.none('UPDATE workflows SET name = $2, updated_at = now() WHERE id = $1', [id, req.name]);
    if (req.status !== undefined && req.status !== status) {
      if (status === 'completed' || status === 'cancelled') {
        throw stateConflict('task', status, `The task is ${status}; it cannot become ${req.status}.`);
      }
      if (req.status === 'paused' && status === 'draft') throw stateConflict('task', status, 'A task that has not started cannot be paused; start it with status running.');
      if (req.status === 'running') {
        const g = await tx.one<{ generation: number }>(
          `UPDATE workflow_campaigns SET status = 'running', generation = generation + 1, started_at = COALESCE(started_at, now()), updated_at = now()
            WHERE id = $1 RETURNING generation`, [cur.campaign_id]);
        schedule = { campaignId: cur.campaign_id, gen: g.generation };
      } else if (req.status === 'paused') {
        await tx.none(`UPDATE workflow_campaigns SET status = 'paused', updated_at = now() WHERE id = $1`, [cur.campaign_id]);
      } else {
        await tx.none(`UPDATE workflow_campaigns SET status = 'cancelled', cancelled_at = now(), updated_at = now() WHERE id = $1`, [cur.campaign_id]);
        cancelled = await cancelContacts(tx, cur);
      }
    }
    const r = await getTask(tx, orgId, id);
    if (within) await within(tx, r);
    return r;
  });
  if (cancelled) wakeRelay(db);
  if (schedule) await enqueueSchedule(queues, (schedule as { campaignId: string }).campaignId, (schedule as { gen: number }).gen);
  return row;
}

/** Ends every unfinished contact (outcome cancelled), each with its workflow_contact_completed, in one statement. */
async function cancelContacts(tx: Tx, t: TaskRow): Promise<number> {
  const r = await tx.result(
    `WITH ended AS (
       UPDATE workflow_contacts SET state = 'cancelled', outcome = 'cancelled', finished_at = now(), wake_at = NULL, updated_at = now()
        WHERE campaign_id = $1 AND state IN ('pending', 'active', 'waiting', 'in_call') RETURNING contact_id, phone_number)
     INSERT INTO events (id, organization_id, event_type, data)
     SELECT ol_uuidv7(), $2, $3, jsonb_build_object('workflow_id', $4::text, 'task_id', $4::text, 'campaign_id', $1::text,
              'contact_id', e.contact_id, 'phone_number', e.phone_number, 'outcome', 'cancelled', 'finished_reason', 'cancelled',
              'steps', COALESCE((SELECT jsonb_agg(jsonb_build_object('step', s.step_index, 'type', s.type, 'outcome', s.outcome, 'ref_id', s.ref_id,
                         'at', to_char(s.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY s.seq, s.attempt)
                  FROM workflow_step_runs s WHERE s.campaign_id = $1 AND s.contact_id = e.contact_id AND s.status = 'done'), '[]'::jsonb))
       FROM ended e`, [t.campaign_id, t.organization_id, CONTACT_COMPLETED_EVENT, t.id]);
  return r.rowCount;
}

export interface TaskContactRow {
  contact_id: string; phone_number: string; state: ContactState; step_index: number; seq: number; attempt: number; wake_at: Date | null;
  wait_reason: string | null; call_id: string | null; last_outcome: string | null; outcome: string | null; finished_at: Date | null; updated_at: Date;
  history?: StepRunRow[];
}
export interface StepRunRow {
  contact_id: string; seq: number; attempt: number; step_index: number; type: string; status: string; outcome: string | null; ref_id: string | null;
  detail: string | null; started_at: Date; finished_at: Date | null;
}

export async function listTaskContacts(db: Db, orgId: string, id: string, p: PageParams, state?: ContactState): Promise<TaskContactRow[]> {
  const t = await getTask(db, orgId, id, false);
  const k = keysetClause('contact_id', p, 3);
  const rows = await db.any<TaskContactRow>(`SELECT * FROM workflow_contacts WHERE campaign_id = $1 AND ($2::text IS NULL OR state = $2)${k.where}${k.tail}`,
    [t.campaign_id, state ?? null, ...k.values]);
  if (!rows.length) return rows;
  const runs = await db.any<StepRunRow>(`SELECT * FROM workflow_step_runs WHERE campaign_id = $1 AND contact_id = ANY($2::uuid[]) ORDER BY seq, attempt`,
    [t.campaign_id, rows.map((r) => r.contact_id)]);
  const by = new Map<string, StepRunRow[]>();
  for (const r of runs) by.set(r.contact_id, [...(by.get(r.contact_id) ?? []), r]);
  for (const r of rows) r.history = by.get(r.contact_id) ?? [];
  return rows;
}

