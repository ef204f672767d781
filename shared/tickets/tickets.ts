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
  return db.tx('ticket-redeem', async (t) => {
    const row = await t.oneOrNone<{ call_id: string; kind: TicketKind; expired: boolean; used_at: Date | null; revoked_at: Date | null }>(
      `SELECT t.call_id, t.kind, t.expires_at <= now() AS expired, t.used_at, t.revoked_at
         FROM call_tickets t JOIN calls c ON c.id = t.call_id
        WHERE t.token_hash = $1 FOR UPDATE`, [sha256(token)]);
    if (!row || row.kind !== kind) return { ok: false as const, code: 'ticket_invalid' as const };
    if (row.used_at) return { ok: false as const, code: 'ticket_used' as const };
    if (row.revoked_at) return { ok: false as const, code: 'ticket_revoked' as const };
    if (row.expired) return { ok: false as const, code: 'ticket_expired' as const };
    const call = await t.one<CallRow>('SELECT * FROM calls WHERE id = $1', [row.call_id]);
    if (call.ended_at) return { ok: false as const, code: 'call_ended' as const };
    await t.none('UPDATE call_tickets SET used_at = now() WHERE call_id = $1', [row.call_id]);
    const now = new Date().toISOString();
    const browser = { status: 'ANSWERED', originated_at: now, signaling: session.instance };
    const updated = await t.one<CallRow>(
      `UPDATE calls SET legs = jsonb_set(legs, '{browser}', COALESCE(legs->'browser', '{}'::jsonb) || $2:json), updated_at = now()
        WHERE id = $1 RETURNING *`, [row.call_id, browser]);
    return { ok: true as const, call: updated, kind: row.kind };
  });
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
