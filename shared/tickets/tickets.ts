// Browser call tickets: one row per browser call (call_tickets), holding only the SHA-256 of the ticket (path A,
// `olwt_` + random) or of the room token (path B). A ticket is redeemed at most once, by whichever signaling
// process gets there first: redemption locks the ticket and its call (SELECT ... FOR UPDATE), so it serializes
// with the cleanup deadline, setup cancellations and every other transition of the call.
import { pgp, type Db } from '../db.ts';
import { randomToken, sha256 } from '../ids.ts';
import type { CallRow, Leg } from '../calls/model.ts';

export const TICKET_PREFIX = 'olwt_';
export type TicketKind = 'webrtc' | 'room';
/** Call types of the browser paths (A: webrtc ticket, B: room token) and inbound calls (a browser answers them):
 *  their progress goes to the softphone socket. */
export const BROWSER_CALL_TYPES: ReadonlySet<string> = new Set(['webrtc', 'room', 'inbound']);

export const newTicket = () => TICKET_PREFIX + randomToken(43);

export async function insertTicket(db: Db, t: { callId: string; organizationId: string; kind: TicketKind; token: string; expiresAt: Date }) {
  await db.none(
    `INSERT INTO call_tickets (call_id, organization_id, kind, token_hash, expires_at) VALUES ($1, $2, $3, $4, $5)`,
    [t.callId, t.organizationId, t.kind, sha256(t.token), t.expiresAt]);
}

export type RedeemError = 'ticket_invalid' | 'ticket_used' | 'ticket_expired' | 'ticket_revoked' | 'call_ended';

/** What redemption answers about the call: signaling needs no more of it. */
export interface RedeemedCall { id: string; organization_id: string; status: CallRow['status'] }

export type Redeemed = { ok: true; call: RedeemedCall; kind: TicketKind } | { ok: false; code: RedeemError };

export interface RedeemRequest { token: string; kind: TicketKind }

/** Redeems a ticket (or room token) atomically: the first caller gets the call, every later one an error saying
 *  why. On success the call's browser leg is marked connected (by `session`, the signaling process holding it). */
export async function redeemTicket(db: Db, token: string, session: { instance: string }, kind: TicketKind): Promise<Redeemed> {
  return (await redeemTickets(db, [{ token, kind }], session))[0];
}

/** Redeems many tickets in one statement (signaling batches the hellos of one event-loop turn), one answer per
 *  request, in order. A ticket given twice is redeemed by its first request; the second is answered after it. */
export async function redeemTickets(db: Db, reqs: RedeemRequest[], session: { instance: string }): Promise<Redeemed[]> {
  const hashes = reqs.map((r) => sha256(r.token));
  const hex = hashes.map((h) => h.toString('hex'));
  const first = new Map<string, number>();
  const again: number[] = [];
  hex.forEach((h, i) => (first.has(h) ? again.push(i) : first.set(h, i)));
  const unique = [...first.values()];
  // One statement, one round trip: lock the calls and their tickets (FOR UPDATE; a concurrent redemption, cleanup
  // or cancellation waits, and then sees the other's result, READ COMMITTED re-reading the locked rows), mark each
  // ticket used and its browser leg connected only when every check passes, and answer why not otherwise. Locks
  // are taken in call id order and each call before its ticket, the order of every call transition (the call row,
  // then revoking its ticket), so batches and transitions never deadlock.
  const browser = { status: 'ANSWERED', originated_at: new Date().toISOString(), signaling: session.instance };
  const rows = await db.any<{ token_hash: Buffer; t_kind: TicketKind; want: TicketKind; t_expired: boolean; t_used: boolean; t_revoked: boolean;
    t_ended: boolean; id: string | null; organization_id: string | null; status: CallRow['status'] | null }>(
    `WITH req AS (
       SELECT * FROM unnest($1::bytea[], $2::text[]) AS r(token_hash, kind)
     ), t AS (
       SELECT t.call_id, t.token_hash, t.kind, req.kind AS want, t.expires_at <= now() AS expired, t.used_at IS NOT NULL AS used,
              t.revoked_at IS NOT NULL AS revoked, c.ended_at IS NOT NULL AS ended
         FROM req JOIN call_tickets t ON t.token_hash = req.token_hash JOIN calls c ON c.id = t.call_id
        ORDER BY t.call_id
        FOR UPDATE OF c, t
     ), used AS (
       UPDATE call_tickets SET used_at = now()
        WHERE call_id IN (SELECT call_id FROM t WHERE kind = want AND NOT used AND NOT revoked AND NOT expired AND NOT ended)
       RETURNING call_id
     ), upd AS (
       UPDATE calls SET legs = jsonb_set(legs, '{browser}', COALESCE(legs->'browser', '{}'::jsonb) || $3:json), updated_at = now()
        WHERE id IN (SELECT call_id FROM used)
       RETURNING id, organization_id, status
     )
     SELECT t.token_hash, t.kind AS t_kind, t.want, t.expired AS t_expired, t.used AS t_used, t.revoked AS t_revoked, t.ended AS t_ended,
            upd.id, upd.organization_id, upd.status
       FROM t LEFT JOIN upd ON upd.id = t.call_id`,
    [unique.map((i) => hashes[i]), unique.map((i) => reqs[i].kind), browser]);
  const byHash = new Map(rows.map((r) => [r.token_hash.toString('hex'), r]));
  const out: Redeemed[] = hex.map((h) => {
    const r = byHash.get(h);
    if (!r || r.t_kind !== r.want) return { ok: false, code: 'ticket_invalid' };
    if (r.t_used) return { ok: false, code: 'ticket_used' };
    if (r.t_revoked) return { ok: false, code: 'ticket_revoked' };
    if (r.t_expired) return { ok: false, code: 'ticket_expired' };
    if (r.t_ended || r.id === null) return { ok: false, code: 'call_ended' };
    return { ok: true, call: { id: r.id, organization_id: r.organization_id!, status: r.status! }, kind: r.t_kind };
  });
  if (again.length) {
    const later = await redeemTickets(db, again.map((i) => reqs[i]), session);
    again.forEach((i, j) => { out[i] = later[j]; });
  }
  return out;
}

/** Marks the browser leg of a call ended (the socket closed or the call ended). Idempotent. */
export async function endBrowserLeg(db: Db, callId: string, reason: Leg['reason']) {
  await db.none(
    `UPDATE calls SET legs = jsonb_set(legs, '{browser}', legs->'browser' || $2:json)
      WHERE id = $1 AND legs ? 'browser' AND legs->'browser'->>'status' <> 'ENDED'`,
    [callId, { status: 'ENDED', ended_at: new Date().toISOString(), reason }]);
}

/** Revokes a ticket that was never used; true when this call revoked it (false: used or revoked already). */
export async function revokeUnusedTicket(db: Db, callId: string, reason: string, diagnostic?: Record<string, unknown>): Promise<boolean> {
  const r = await db.result(
    `UPDATE call_tickets SET revoked_at = now(), revoke_reason = $2,
            setup_diagnostic = COALESCE(setup_diagnostic, $3:json)
      WHERE call_id = $1 AND used_at IS NULL AND revoked_at IS NULL`, [callId, reason, diagnostic ?? null]);
  return r.rowCount === 1;
}

/** Records why setting up a browser call failed (kept apart from the call's outcome); the first one wins. */
export async function recordSetupDiagnostic(db: Db, callId: string, diagnostic: Record<string, unknown>) {
  await db.none(pgp.as.format(
    `UPDATE call_tickets SET setup_diagnostic = COALESCE(setup_diagnostic, $2:json) WHERE call_id = $1`, [callId, diagnostic]));
}

export async function getTicketState(db: Db, callId: string) {
  return db.oneOrNone<{ kind: TicketKind; used_at: Date | null; revoked_at: Date | null; revoke_reason: string | null;
    setup_diagnostic: Record<string, unknown> | null; expires_at: Date }>(
    'SELECT kind, used_at, revoked_at, revoke_reason, setup_diagnostic, expires_at FROM call_tickets WHERE call_id = $1', [callId]);
}
