// Browser call tickets: one row per browser call (call_tickets), holding only the SHA-256 of the ticket (path A,
// `olwt_` + random) or of the room token (path B). A ticket is redeemed at most once, by whichever signaling
// process gets there first: redemption locks the ticket and its call (SELECT ... FOR UPDATE), so it serializes
// with the cleanup deadline, setup cancellations and every other transition of the call.
import { pgp, type Db } from '../db.ts';
import { randomToken, sha256 } from '../ids.ts';
import type { CallRow, Leg } from '../calls/model.ts';

export const TICKET_PREFIX = 'olwt_';
export type TicketKind = 'webrtc' | 'room';
/** Call types of the browser paths (A: webrtc ticket, B: room token). */
export const BROWSER_CALL_TYPES: ReadonlySet<string> = new Set(['webrtc', 'room']);

export const newTicket = () => TICKET_PREFIX + randomToken(43);

export async function insertTicket(db: Db, t: { callId: string; organizationId: string; kind: TicketKind; token: string; expiresAt: Date }) {
  await db.none(
    `INSERT INTO call_tickets (call_id, organization_id, kind, token_hash, expires_at) VALUES ($1, $2, $3, $4, $5)`,
    [t.callId, t.organizationId, t.kind, sha256(t.token), t.expiresAt]);
}

export type RedeemError = 'ticket_invalid' | 'ticket_used' | 'ticket_expired' | 'ticket_revoked' | 'call_ended';

export type Redeemed = { ok: true; call: CallRow; kind: TicketKind } | { ok: false; code: RedeemError };

/** Redeems a ticket (or room token) atomically: the first caller gets the call, every later one an error saying
 *  why. On success the call's browser leg is marked connected (by `session`, the signaling process holding it). */
export async function redeemTicket(db: Db, token: string, session: { instance: string }, kind: TicketKind): Promise<Redeemed> {
  // One statement, one round trip: lock the ticket and its call (FOR UPDATE; a concurrent redemption, cleanup or
  // cancellation waits, and then sees the other's result, READ COMMITTED re-reading the locked rows), mark the
  // ticket used and the browser leg connected only when every check passes, and answer why not otherwise.
  const browser = { status: 'ANSWERED', originated_at: new Date().toISOString(), signaling: session.instance };
  const row = await db.oneOrNone<CallRow & { t_kind: TicketKind; t_expired: boolean; t_used: boolean; t_revoked: boolean; t_ended: boolean; t_redeemed: boolean }>(
    `WITH t AS (
       SELECT t.call_id, t.kind, t.expires_at <= now() AS expired, t.used_at IS NOT NULL AS used,
              t.revoked_at IS NOT NULL AS revoked, c.ended_at IS NOT NULL AS ended
         FROM call_tickets t JOIN calls c ON c.id = t.call_id
        WHERE t.token_hash = $1 FOR UPDATE
     ), used AS (
       UPDATE call_tickets SET used_at = now()
        WHERE call_id = (SELECT call_id FROM t WHERE kind = $2 AND NOT used AND NOT revoked AND NOT expired AND NOT ended)
       RETURNING call_id
     ), upd AS (
       UPDATE calls SET legs = jsonb_set(legs, '{browser}', COALESCE(legs->'browser', '{}'::jsonb) || $3:json), updated_at = now()
        WHERE id = (SELECT call_id FROM used)
       RETURNING *
     )
     SELECT upd.*, t.kind AS t_kind, t.expired AS t_expired, t.used AS t_used, t.revoked AS t_revoked, t.ended AS t_ended,
            upd.id IS NOT NULL AS t_redeemed
       FROM t LEFT JOIN upd ON true`, [sha256(token), kind, browser]);
  if (!row || row.t_kind !== kind) return { ok: false, code: 'ticket_invalid' };
  if (row.t_used) return { ok: false, code: 'ticket_used' };
  if (row.t_revoked) return { ok: false, code: 'ticket_revoked' };
  if (row.t_expired) return { ok: false, code: 'ticket_expired' };
  if (row.t_ended || !row.t_redeemed) return { ok: false, code: 'call_ended' };
  const { t_kind, t_expired, t_used, t_revoked, t_ended, t_redeemed, ...call } = row;
  void t_expired; void t_used; void t_revoked; void t_ended; void t_redeemed;
  return { ok: true, call: call as CallRow, kind: t_kind };
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
