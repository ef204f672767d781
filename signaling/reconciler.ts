// The signaling reconciler: repairs leg accounting and browser calls after a crash. Every RECONCILE_MS one
// signaling process (a Redis lock picks it) reads the live calls from Postgres and
//   1. abandons browser calls whose socket was held by a signaling process that is gone (its heartbeat key lapsed,
//      while Redis kept its state for longer than a heartbeat lives):
//      before the answer CANCELED / connection_unconfirmed, after it COMPLETED, like a closed socket; and closes
//      their media sessions;
//   2. rebuilds every organization's live legs in Redis from the call rows (the truth);
//   3. re-schedules the cleanup of unused tickets past their deadline whose job was lost (a gateway died between the
//      insert and the enqueue), and abandons browser calls that never got a ticket row.
// Channel holds are repaired by the workers' calls reconciler.
// With CARRIER=sip each SIP signaling process also runs reconcileSipOrphans (below) for the SIP legs of dead processes.
import { publishCarrierEvent } from '../shared/carriers/carrier.ts';
import { NO_LEG, SIP_CARRIER, sipCommandQueue, sipInstancesKey, sipOwnerKey } from '../shared/carriers/sip.ts';
import type { CallRuntime } from '../shared/calls/runtime.ts';
import type { Leg, Legs } from '../shared/calls/model.ts';
import { scheduleTicketCleanup } from '../shared/tickets/queue.ts';
import { endBrowserLeg } from '../shared/tickets/tickets.ts';
import type { LegAccounts } from '../shared/channels/legs.ts';
import { forgetDialog, readDialog, type DialogRecord } from './sip/dialog-record.ts';

export const HEARTBEAT_MS = 2_000;
export const HEARTBEAT_TTL_MS = 6_000;
export const RECONCILE_MS = 2_000;
const LIVE: Leg['status'][] = ['DIALING', 'RINGING', 'ANSWERED'];

export const aliveKey = (rt: CallRuntime, instance: string) => rt.deps.key('sig', 'alive', instance);

export interface SignalingReport { abandoned: number; legsBefore: number; legsAfter: number; cleanups: number }
/** How long past its deadline an unused ticket may wait for its cleanup job before the job is re-scheduled. */
const CLEANUP_GRACE_SECONDS = 5;

/** media: when given, the media session of each call abandoned here is closed too (media's own session limit is the
 *  backstop when media cannot be reached). */
export async function reconcileSignaling(rt: CallRuntime, legs: LegAccounts, media?: { closeSession(callId: string): Promise<unknown> } | null): Promise<SignalingReport | null> {
  const { db, redis, key } = rt.deps;
  const lock = await redis.set(key('sig', 'reconcile-lock'), '1', 'PX', RECONCILE_MS - 200, 'NX');
  if (lock !== 'OK') return null;
  const report: SignalingReport = { abandoned: 0, legsBefore: 0, legsAfter: 0, cleanups: 0 };
  const live = await db.any<{ id: string; organization_id: string; legs: Legs }>(
    `SELECT id, organization_id, legs FROM calls WHERE ended_at IS NULL ORDER BY id LIMIT 20000`);

  const owners = new Set<string>();
  for (const c of live) {
    const b = c.legs.browser;
    if (b && b.status === 'ANSWERED' && b.signaling) owners.add(b.signaling);
  }
  // A heartbeat missing because Redis lost its state (restarted empty) is no sign of death: owners are judged only
  // once this Redis has kept our state longer than a heartbeat lives (the key below goes with everything else).
  const judge = await mayJudgeOwners(rt);
  const dead = new Set<string>();
  for (const o of owners) if (judge && !(await redis.exists(aliveKey(rt, o)))) dead.add(o);

  const truth = new Map<string, Map<string, number>>();
  for (const c of live) {
    const b = c.legs.browser;
    if (b && b.status === 'ANSWERED' && b.signaling && dead.has(b.signaling)) {
      // Its SIP legs died with the same process: reconcileSipOrphans ends the call (signaling_lost) and hangs them up;
      // ended here first, the call would leave them up (their hang-up commands go to a dead process).
      if (await sipLegsOwnedBy(rt, c, b.signaling)) continue;
      const r = await rt.transition(c.id, { type: 'abandon', reason: 'setup_abandoned', at: new Date() }, { bestEffort: true });
      await endBrowserLeg(db, c.id, 'local_hangup');
      await media?.closeSession(c.id).catch(() => undefined); // not_found: it had none, or it is gone already
      if (r?.step.result === 'applied') report.abandoned++;
      continue;
    }
    for (const leg of Object.values(c.legs)) {
      if (!leg || !LIVE.includes(leg.status)) continue;
      let org = truth.get(c.organization_id);
      if (!org) truth.set(c.organization_id, (org = new Map()));
      org.set(`${c.id}:${leg.role}`, Date.parse(leg.answered_at ?? leg.originated_at ?? '') || Date.now());
    }
  }
  const r = await legs.replace(truth);
  report.legsBefore = r.before;
  report.legsAfter = r.after;

  const lost = await db.any<{ id: string }>(
    `SELECT c.id FROM calls c LEFT JOIN call_tickets t ON t.call_id = c.id
      WHERE c.ended_at IS NULL AND c.type IN ('webrtc', 'room')
        AND ((t.call_id IS NOT NULL AND t.used_at IS NULL AND t.revoked_at IS NULL
              AND t.expires_at < now() - make_interval(secs => $1))
          OR (t.call_id IS NULL AND c.created_at < now() - make_interval(secs => $2)))
      LIMIT 500`, [CLEANUP_GRACE_SECONDS, rt.deps.config.ticketCleanupSeconds + CLEANUP_GRACE_SECONDS]);
  for (const { id } of lost) {
    // Same job id as at issue: a job still pending is not duplicated. Without a ticket the job abandons the call.
    await scheduleTicketCleanup(rt.deps.queues, id, 0);
    report.cleanups++;
  }
  return report;
}

/** Whether a live SIP leg (connect or destination) of the call is owned by signaling process `instance`. */
async function sipLegsOwnedBy(rt: CallRuntime, c: { id: string; legs: Legs }, instance: string): Promise<boolean> {
  const sip = (['connect', 'destination'] as const).filter((role) => c.legs[role] && LIVE.includes(c.legs[role]!.status));
  if (!sip.length) return false;
  const owners = await rt.deps.redis.mget(sip.map((role) => sipOwnerKey(rt.deps.key, `${c.id}-${role}`)));
  return owners.includes(instance);
}

/** Whether a missing heartbeat means death: only once this Redis has kept our state longer than a heartbeat lives (a
 *  Redis that restarted empty lost every heartbeat, and the key below with them). */
async function mayJudgeOwners(rt: CallRuntime): Promise<boolean> {
  const { redis, key } = rt.deps;
  const watchedSince = key('sig', 'watched-since');
  await redis.set(watchedSince, String(Date.now()), 'NX');
  const since = await redis.get(watchedSince);
  return since !== null && Date.now() - Number(since) >= HEARTBEAT_TTL_MS;
}

/** What a live SIP signaling process lends the orphan sweep (signaling/sip/service.ts). */
export interface SipOrphanHost {
  /** Hangs the recorded leg up from this process's user agent: BYE for an answered dialog, CANCEL for a pending INVITE. */
  hangUp(rec: DialogRecord): void;
  /** Closes the call's media session (its RTP ports). */
  closeMedia(callId: string): Promise<void>;
}

export interface SipOrphanReport { calls: number; legs: number; byes: number; cancels: number }

/** The SIP legs of signaling processes that died (their SIP_INSTANCES entry lapsed): every RECONCILE_MS one live SIP
 *  signaling process (a Redis lock picks it), per call with such a leg,
 *    1. marks the leg's owner NO_LEG, so the workers' commands about it (the hang-ups below) are no-ops;
 *    2. ends the call: abandon `signaling_lost` (after the answer COMPLETED / answered, before it CANCELED /
 *       connection_unconfirmed), which releases its channels and spend and fires its webhooks;
 *    3. hangs up each leg whose dialog or pending INVITE was recorded (dialog-record.ts) from this process: BYE once
 *       answered, CANCEL while it rings (with the INVITE's own Via, so the far end matches it), and reports each
 *       orphaned leg ended (local_hangup, the leg's next event number) for the leg records;
 *    4. closes the call's media session.
 *  An outbound INVITE that had no provisional response yet is not recorded (RFC 3261 §9.1: no CANCEL before one): if it
 *  is answered later, the answer gets no ACK and the far end gives up on it (§13.3.1.4). An inbound leg still ringing
 *  is not recorded either: its caller hears ringing until its own timer. */
export async function reconcileSipOrphans(rt: CallRuntime, host: SipOrphanHost): Promise<SipOrphanReport | null> {
  const { db, redis, key } = rt.deps;
  const lock = await redis.set(key('sip', 'orphan-lock'), '1', 'PX', RECONCILE_MS - 200, 'NX');
  if (lock !== 'OK') return null;
  const report: SipOrphanReport = { calls: 0, legs: 0, byes: 0, cancels: 0 };
  if (!(await mayJudgeOwners(rt))) return report;
  const live = await db.any<{ id: string; legs: Legs }>(
    `SELECT id, legs FROM calls WHERE ended_at IS NULL AND (legs ? 'connect' OR legs ? 'destination') ORDER BY id LIMIT 20000`);
  const legs = live.flatMap((c) => (['connect', 'destination'] as const)
    .map((role) => ({ callId: c.id, leg: c.legs[role] }))
    .filter((x): x is { callId: string; leg: Leg } => !!x.leg && LIVE.includes(x.leg.status)));
  if (!legs.length) return report;
  const browsers = new Map(live.filter((c) => c.legs.browser).map((c) => [c.id, c.legs.browser!]));
  const owners = await redis.mget(legs.map((l) => sipOwnerKey(key, `${l.callId}-${l.leg.role}`)));
  const alive = new Set(await redis.zrangebyscore(sipInstancesKey(key), Date.now(), '+inf'));
  const orphans = new Map<string, Leg[]>();
  const dead = new Set<string>();
  legs.forEach((l, i) => {
    const owner = owners[i];
    if (!owner || owner === NO_LEG || alive.has(owner)) return; // not handed out yet, over, or owned by a live process
    dead.add(owner);
    orphans.set(l.callId, [...(orphans.get(l.callId) ?? []), l.leg]);
  });
  for (const [callId, lost] of orphans) {
    for (const leg of lost) await redis.set(sipOwnerKey(key, `${callId}-${leg.role}`), NO_LEG, 'KEEPTTL');
    const r = await rt.transition(callId, { type: 'abandon', reason: 'signaling_lost', at: new Date() }, { bestEffort: true });
    if (r?.step.result === 'applied') report.calls++;
    for (const leg of lost) {
      const legId = `${callId}-${leg.role}`;
      const rec = await readDialog(redis, key, legId);
      if (rec) {
        host.hangUp(rec);
        if (rec.pendingInvite) report.cancels++;
        else report.byes++;
        await forgetDialog(redis, key, legId);
      }
      await publishCarrierEvent(rt.queues.carrierEvents, {
        carrier: SIP_CARRIER, callId, legId, role: leg.role, kind: 'ended', reason: 'local_hangup', at: new Date().toISOString(),
        seq: (leg.last_seq ?? 0) + 1,
      });
      report.legs++;
    }
    // A browser on the same dead process (an accepted inbound call, a browser call over the trunk) is gone too.
    const browser = browsers.get(callId);
    if (browser?.status === 'ANSWERED' && browser.signaling && dead.has(browser.signaling)) await endBrowserLeg(db, callId, 'local_hangup');
    await host.closeMedia(callId).catch(() => undefined); // not_found: it had none, or it is gone already
  }
  // Commands sent to a dead process would wait in its queue forever: drop the queue (its legs now answer NO_LEG).
  for (const instance of dead) {
    await rt.deps.queues.obliterate(sipCommandQueue(instance)).catch(() => undefined);
  }
  return report;
}
