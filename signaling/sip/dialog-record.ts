// Answered SIP dialogs recorded in Redis, so that a surviving signaling process can hang up the legs of one that died
// (signaling/reconciler.ts, reconcileSipOrphans). The owner writes the record when the leg is answered (outbound
// legs when the far end's 200 OK came, inbound legs when our 200 OK went out) and deletes it when the leg ends; it holds what an in-dialog BYE needs (RFC 3261 §12.2.1.1): Call-ID, our From (local tag), the
// far end's To (remote tag), the remote target, the route set and the last CSeq. The survivor sends the BYE from its
// own address (its Via), which the far end answers there.
import type { Redis } from 'ioredis';
import sip from 'sip';
import digest from 'sip/digest';
import type { LegRole } from '../../shared/carriers/carrier.ts';
import type { Keyer } from '../../shared/redis.ts';
import type { SipUserAgent } from './user-agent.ts';

export interface DialogRecord {
  callId: string;
  legId: string;
  role: LegRole;
  /** The signaling instance that holds the dialog. */
  owner: string;
  sipCallId: string;
  /** The remote target (the far end's Contact). */
  target: string;
  from: sip.NameAddr;
  to: sip.NameAddr;
  route: sip.NameAddr[];
  cseq: number;
  /** Set while an outbound leg's INVITE is still pending (it rang, nobody answered yet): what a CANCEL must repeat of
   *  it besides Call-ID, From, To and the CSeq number (RFC 3261 §9.1): the Request-URI and the top Via, branch and
   *  all, so that the far end matches the CANCEL to its INVITE transaction although another process sends it. */
  pendingInvite?: { uri: string; via: sip.Via };
}

/** What a leg knows of its dialog once answered (both directions): everything of the record but who holds it. */
export type DialogState = Pick<DialogRecord, 'sipCallId' | 'target' | 'from' | 'to' | 'route' | 'cseq' | 'pendingInvite'>;

export const sipDialogKey = (key: Keyer, legId: string) => key('sip', 'dialog', legId);

export async function saveDialog(redis: Redis, key: Keyer, rec: DialogRecord, ttlSeconds: number): Promise<void> {
  await redis.set(sipDialogKey(key, rec.legId), JSON.stringify(rec), 'EX', Math.max(60, Math.ceil(ttlSeconds)));
}

export async function forgetDialog(redis: Redis, key: Keyer, legId: string): Promise<void> {
  await redis.del(sipDialogKey(key, legId));
}

export async function readDialog(redis: Redis, key: Keyer, legId: string): Promise<DialogRecord | null> {
  const raw = await redis.get(sipDialogKey(key, legId));
  return raw ? JSON.parse(raw) as DialogRecord : null;
}

/** Sends the CANCEL of a pending INVITE recorded by a process that died. The far end answers the CANCEL here (our
 *  Via's rport, or our TCP connection) and sends its 487 for the INVITE to the dead process's address, where nobody
 *  acknowledges it: it gives up after Timer H (RFC 3261 §17.2.1). Resolves with the CANCEL's final status. */
export function sendRecoveredCancel(ua: SipUserAgent, rec: DialogRecord & { pendingInvite: NonNullable<DialogRecord['pendingInvite']> }): Promise<number> {
  const cancel: sip.Message = {
    method: 'CANCEL', uri: rec.pendingInvite.uri,
    headers: {
      via: [rec.pendingInvite.via], to: rec.to, from: rec.from, 'call-id': rec.sipCallId,
      cseq: { seq: rec.cseq, method: 'CANCEL' }, 'max-forwards': 70,
    },
  };
  return new Promise((resolve) => {
    const guard = setTimeout(() => resolve(408), BYE_WAIT_MS);
    ua.request(cancel, ua.trunk, (rs) => {
      if ((rs.status ?? 0) < 200) return;
      clearTimeout(guard);
      resolve(rs.status!);
    });
  });
}

/** How long a recovered BYE waits for its final response (Timer F is 32 s; the far end has usually answered long before). */
const BYE_WAIT_MS = 33_000;

/** Sends the dialog's BYE from this user agent (answering one digest challenge like the owner would). Resolves with
 *  the final status (408 when nobody answered). */
export function sendRecoveredBye(ua: SipUserAgent, rec: DialogRecord): Promise<number> {
  let cseq = rec.cseq;
  const bye = (): sip.Message => ({
    method: 'BYE', uri: rec.target,
    headers: {
      to: rec.to, from: rec.from, 'call-id': rec.sipCallId, cseq: { seq: ++cseq, method: 'BYE' }, 'max-forwards': 70,
      ...(rec.route.length ? { route: rec.route } : {}),
    },
  });
  const hop = ua.nextHop(rec.route[0]?.uri ?? rec.target);
  return new Promise((resolve) => {
    const guard = setTimeout(() => resolve(408), BYE_WAIT_MS);
    const send = (rq: sip.Message, retry: boolean) => ua.request(rq, hop, (rs) => {
      const status = rs.status ?? 0;
      if (status < 200) return;
      const c = ua.settings.credentials;
      if ((status === 401 || status === 407) && retry && c) {
        const again = bye();
        try {
          digest.signRequest({}, again, rs, { user: c.username, password: c.password });
          send(again, false);
          return;
        } catch { /* a challenge we cannot answer: report it */ }
      }
      clearTimeout(guard);
      resolve(status);
    });
    send(bye(), true);
  });
}
