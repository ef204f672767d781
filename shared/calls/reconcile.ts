// The calls reconciler: repairs what a process that died between a commit and its follow-up left behind.
//   1. Channel holds of calls that are over in Postgres (or that never got a row: a gateway died between admission
//      and insert) are released; a counter that disagrees with its holds is recomputed from them.
//   2. Calls left QUEUED without a dial job get one (the gateway answers 202 once the row is committed).
//   3. Live calls that have not moved for a while get the carrier work their state calls for re-issued (every
//      carrier command is idempotent).
//   5. Spend reservations (shared/spend) of calls that are over are replaced by their cost, those of calls that
//      never got a row are dropped, a drifted counter is recomputed, and a day Redis lost while calls of it are
//      live is seeded again from PostgreSQL.
//   4. Calls past every deadline (the length limit of an answered call, the ring time of an originated one) are
//      ended, so no call — and no channel — is held forever.
import { spendDay } from './limits.ts';
import { pendingEffects, limitDeadline } from './machine.ts';
import type { CallRow } from './model.ts';
import type { CallRuntime } from './runtime.ts';

export interface ReconcileReport {
  released: number; recounted: number; requeued: number; nudged: number; forced: number;
  spend_settled: number; spend_recounted: number; spend_seeded: number;
}

/** Holds younger than this may belong to a dial still being inserted. */
const ORPHAN_HOLD_MS = 60_000;
const QUEUED_STALE_SECONDS = 10;
const NUDGE_AFTER_SECONDS = 30;
const FORCE_GRACE_SECONDS = 60;

/** spendHolds: also check every spend reservation against PostgreSQL (O(live calls); the service does it every
 *  few passes, since a settle is lost only when a process dies between a call's end and its settle). */
export async function reconcileOnce(rt: CallRuntime, nudged: Map<string, number>, now = Date.now(), o = { spendHolds: true }): Promise<ReconcileReport> {
  const { db } = rt.deps;
  const report: ReconcileReport = { released: 0, recounted: 0, requeued: 0, nudged: 0, forced: 0, spend_settled: 0, spend_recounted: 0, spend_seeded: 0 };

  // 1. Channels.
  for (const org of await rt.channels.organizationsHolding()) {
    const holds = await rt.channels.holds(org);
    const ids = [...holds.keys()];
    const rows = ids.length
      ? await db.any<{ id: string; ended: boolean }>('SELECT id, ended_at IS NOT NULL AS ended FROM calls WHERE id = ANY($1::uuid[])', [ids])
      : [];
    const state = new Map(rows.map((r) => [r.id, r.ended]));
    let sum = 0;
    for (const [callId, h] of holds) {
      const ended = state.get(callId);
      if (ended === true || (ended === undefined && now - h.admittedAt > ORPHAN_HOLD_MS)) {
        report.released += (await rt.channels.release(org, callId)) > 0 ? 1 : 0;
      } else {
        sum += h.channels;
      }
    }
    if ((await rt.channels.used(org)) !== sum) {
      const r = await rt.channels.recount(org);
      if (r.before !== r.after) report.recounted++;
    }
  }

  // 2. QUEUED calls without a dial job.
  const queued = await db.any<{ id: string; organization_id: string; created_at: Date; spend_reserved_cents: number | null }>(
    `SELECT id, organization_id, created_at, spend_reserved_cents FROM calls WHERE ended_at IS NULL AND status = 'QUEUED' AND created_at < now() - make_interval(secs => $1)
        -- a browser call of path A is dialed only once its ticket is redeemed
        AND (type <> 'webrtc' OR EXISTS (SELECT 1 FROM call_tickets t WHERE t.call_id = calls.id AND t.used_at IS NOT NULL))
      ORDER BY created_at LIMIT 500`, [QUEUED_STALE_SECONDS]);
  for (const { id, ...c } of queued) {
    const job = await rt.queues.dial.getJob(id);
    if (!job) {
      await rt.queues.enqueueDial(id, { organizationId: c.organization_id, spendDay: c.spend_reserved_cents === null ? null : spendDay(c.created_at) });
      report.requeued++;
    } else if (await job.isFailed()) {
      await job.retry();
      report.requeued++;
    }
  }

  // 3. and 4. Live calls that stopped moving.
  const stale = await db.any<CallRow>(
    `SELECT * FROM calls WHERE ended_at IS NULL AND status <> 'QUEUED' AND updated_at < now() - make_interval(secs => $1)
      ORDER BY updated_at LIMIT 500`, [NUDGE_AFTER_SECONDS]);
  for (const call of stale) {
    const overdue = call.status === 'ANSWERED'
      ? now > limitDeadline(call) + FORCE_GRACE_SECONDS * 1000
      : now > call.originated_at!.getTime() + (2 * call.ring_timeout_seconds + 30) * 1000 * call.time_scale + FORCE_GRACE_SECONDS * 1000;
    if (overdue) {
      const at = new Date(call.status === 'ANSWERED' ? limitDeadline(call) : now);
      const r = await rt.transition(call.id, { type: 'force_end', at });
      if (r?.step.result === 'applied') report.forced++;
      continue;
    }
    const last = nudged.get(call.id) ?? 0;
    if (now - last < NUDGE_AFTER_SECONDS * 1000) continue;
    nudged.set(call.id, now);
    await rt.run(call, pendingEffects(call));
    report.nudged++;
  }
  if (nudged.size > 10_000) nudged.clear();

  await reconcileSpend(rt, report, now, o.spendHolds);
  return report;
}

async function reconcileSpend(rt: CallRuntime, report: ReconcileReport, now: number, holds: boolean): Promise<void> {
  const { db } = rt.deps;
  // Days Redis lost while calls admitted on them are live.
  const live = await db.any<{ organization_id: string; day: string }>(
    `SELECT DISTINCT organization_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day
       FROM calls WHERE ended_at IS NULL AND spend_reserved_cents IS NOT NULL`);
  for (const { organization_id, day } of live) {
    if (!(await rt.spend.exists(organization_id, day)) && await rt.spend.seed(organization_id, day)) report.spend_seeded++;
  }
  if (!holds) return;
  // Reservations of calls that are over (their settle was lost) or never got a row.
  for (const { orgId, day } of await rt.spend.daysHolding()) {
    const state = await rt.spend.read(orgId, day);
    if (!state) {
      await rt.spend.recount(orgId, day); // gone from Redis (expired or lost): forget the day
      continue;
    }
    const ids = [...state.calls.keys()];
    const rows = ids.length
      ? await db.any<{ id: string; ended: boolean; cost_cents: number }>(
        'SELECT id, ended_at IS NOT NULL AS ended, cost_cents FROM calls WHERE id = ANY($1::uuid[])', [ids])
      : [];
    // A reservation that is no call may be a charge (shared/spend/charges.ts) whose settle was lost after its row
    // committed: it settles at the row's price.
    const missing = ids.filter((id) => !rows.some((r) => r.id === id));
    const charges = missing.length
      ? await db.any<{ id: string; cost_cents: number }>('SELECT id, cents AS cost_cents FROM spend_charges WHERE id = ANY($1::uuid[])', [missing])
      : [];
    const byId = new Map([...rows, ...charges.map((c) => ({ ...c, ended: true }))].map((r) => [r.id, r]));
    for (const [callId, r] of state.calls) {
      const row = byId.get(callId);
      if (row?.ended || (!row && now - r.admittedAt > ORPHAN_HOLD_MS)) {
        report.spend_settled += (await rt.spend.settle(orgId, day, callId, row ? row.cost_cents : -1)) > 0 ? 1 : 0;
      }
    }
    // One HGETALL is one snapshot: its counter must be the sum of its reservations.
    if (state.reserved !== ids.reduce((sum, id) => sum + state.calls.get(id)!.cents, 0) || !ids.length) {
      const r = await rt.spend.recount(orgId, day);
      if (r.before !== r.after) report.spend_recounted++;
    }
  }
}
