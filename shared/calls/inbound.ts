// Inbound calls (CARRIER=sip): a call from outside to a number an organization holds. The SIP side lives in
// signaling/sip/inbound-leg.ts; these are the rules and the rows.
//
//   route      the number must be ACTIVE on some organization (else 404, nothing written); its `inbound` setting
//              reject answers 480 (nothing written); softphone admits it like a placed call: the daily spend cap
//              (a reservation, refused: 480) and the channel limit (1 channel, refused: 486), then one row (type and
//              direction inbound, RINGING, its caller as the destination leg) and its new_call event.
//   accept     the first browser to accept takes the call: its browser leg is written under the row's lock, only
//              while the call still rings and nobody took it (any signaling process, one winner).
// From there the caller's leg reports answered / ended like any carrier leg (the workers apply them), so the end,
// its webhook (call_completed, call_no_answer, ...), the spend and the channel release are the call machine's.
//
// The sandbox carrier rings browsers too (POST /v1/sandbox/calls/inbound with ring: true, ringSandboxInbound): the
// same route and admission for a number of the requesting organization, refusals as API errors (unknown 404, reject
// 409 state_conflict, channel_limit_exceeded 409, spend_cap_reached 402); its caller's leg is scripted by
// shared/carriers/sandbox.ts (ring timeout; on accept, answered and a hang-up talk_seconds later).
import { answerSandboxInbound, scheduleSandboxRingTimeout } from '../carriers/sandbox.ts';
import { CARRIER_EVENTS_QUEUE } from '../carriers/carrier.ts';
import type { Db } from '../db.ts';
import { DomainError } from '../errors.ts';
import { uuidv7 } from '../ids.ts';
import { isE164 } from '../phone/e164.ts';
import { effectiveMaxCallMinutes, spendDay } from './limits.ts';
import { minimumCents, reservedTalkSeconds, worstCaseCents } from './pricing.ts';
import { CHANNELS, type CallRow, type Leg } from './model.ts';
import type { CallRuntime } from './runtime.ts';
import { insertCall } from './store.ts';
import { publishIncoming } from './incoming-notice.ts';

export type InboundSetting = 'softphone' | 'reject';
export const INBOUND_SETTINGS: InboundSetting[] = ['softphone', 'reject'];

export type InboundRoute =
  /** Nobody holds the number (or it is not ACTIVE). */
  | { kind: 'unknown' }
  /** The number's inbound setting is reject. */
  | { kind: 'reject'; organizationId: string }
  /** The organization's limits have no room for it. */
  | { kind: 'refused'; organizationId: string; code: 'channel_limit_exceeded' | 'spend_cap_reached' }
  | { kind: 'ringing'; call: CallRow };

interface Target {
  phone_id: number;
  sub_entity_id: string | null;
  organization_id: string;
  user_id: string;
  inbound: InboundSetting;
  phone_max: number | null;
  max_call_minutes: number;
  channel_limit: number;
  daily_spend_cap_cents: number;
}

/** The caller's number as the call records it: E.164 when the trunk sent digits, else what it sent (anonymous). */
export function callerNumber(user: string | undefined): string {
  const u = (user ?? '').trim();
  if (isE164(u)) return u;
  if (/^\d{8,15}$/.test(u) && isE164(`+${u}`)) return `+${u}`;
  return u && u.length <= 64 ? u : 'anonymous';
}

/** Routes an inbound call to `to` (E.164); `claim(callId)` runs once it is admitted, before its row is written (the
 *  SIP owner of the leg is recorded there, so every later command about the call reaches it). organizationId: only a
 *  number of that organization (a sandbox call rung through the API); talkSeconds: recorded on the caller's leg (the
 *  sandbox's script reads it when a browser accepts). */
export async function routeInbound(rt: CallRuntime, o: { to: string; from: string; ringSeconds: number; claim: (callId: string) => Promise<void>;
  organizationId?: string; talkSeconds?: number }): Promise<InboundRoute> {
  const { db } = rt.deps;
  if (!isE164(o.to)) return { kind: 'unknown' };
  const t = await db.oneOrNone<Target>(
    `SELECT p.id AS phone_id, p.sub_entity_id, p.organization_id, p.user_id, p.inbound, p.max_call_minutes AS phone_max, o.max_call_minutes,
            o.channel_limit, o.daily_spend_cap_cents
       FROM phone_numbers p JOIN organizations o ON o.id = p.organization_id
      WHERE p.phone_number = $1 AND p.status = 'ACTIVE' AND ($2::uuid IS NULL OR p.organization_id = $2)`, [o.to, o.organizationId ?? null]);
  if (!t) return { kind: 'unknown' };
  if (t.inbound === 'reject') return { kind: 'reject', organizationId: t.organization_id };

  const now = new Date();
  const id = uuidv7(now.getTime());
  const price = rt.profile.pricePerMinuteCents;
  const lengthLimitSeconds = effectiveMaxCallMinutes(t.max_call_minutes, t.phone_max) * 60;
  const day = spendDay(now);
  const spend = await rt.spend.reserve(t.organization_id, day, id, {
    worstCents: worstCaseCents('inbound', lengthLimitSeconds, o.ringSeconds, price),
    minimumCents: minimumCents('inbound', price), capCents: t.daily_spend_cap_cents, now: now.getTime(),
  });
  if (!spend.admitted) return { kind: 'refused', organizationId: t.organization_id, code: 'spend_cap_reached' };
  const releaseSpend = () => rt.spend.settle(t.organization_id, day, id, -1).catch(() => undefined);
  const adm = await rt.channels.admit(t.organization_id, id, CHANNELS.inbound, t.channel_limit, now.getTime());
  if (!adm.admitted) {
    await releaseSpend();
    return { kind: 'refused', organizationId: t.organization_id, code: 'channel_limit_exceeded' };
  }
  try {
    await o.claim(id);
    const caller: Leg = { role: 'destination', number: o.from, status: 'RINGING', reason: null, originated_at: now.toISOString(), answered_at: null, ended_at: null,
      ...(o.talkSeconds !== undefined ? { talk_seconds: o.talkSeconds } : {}) };
    const call = await insertCall(db, {
      id, organization_id: t.organization_id, api_key_id: null, user_id: t.user_id, type: 'inbound', direction: 'inbound',
      status: 'RINGING', originated_at: now, from_number: o.from, to_number: o.to, connect_number: null, phone_number_id: t.phone_id, sub_entity_id: t.sub_entity_id,
      agent_id: null, agent: null, record: false, legs: { destination: caller }, channels: CHANNELS.inbound, carrier: rt.profile.name,
      time_scale: rt.profile.timeScale, max_duration_seconds: Math.min(lengthLimitSeconds, reservedTalkSeconds('inbound', spend.reservedCents, price)),
      spend_reserved_cents: spend.reservedCents, ring_timeout_seconds: o.ringSeconds, price_cents_per_minute: price, created_at: now,
    });
    await rt.announce(call);
    return { kind: 'ringing', call };
  } catch (err) {
    await rt.channels.release(t.organization_id, id).catch(() => undefined);
    await releaseSpend();
    throw err;
  }
}

/** The browser `who` (a user or key id) on signaling process `instance` takes the ringing call; null when it is not
 *  ringing any more or another browser took it first. */
export async function acceptInbound(db: Db, callId: string, organizationId: string, who: string, instance: string): Promise<CallRow | null> {
  const browser = { role: 'browser', number: `browser:${who}`, status: 'ANSWERED', reason: null, originated_at: new Date().toISOString(),
    answered_at: null, ended_at: null, signaling: instance };
  return db.oneOrNone<CallRow>(
    `UPDATE calls SET legs = jsonb_set(legs, '{browser}', $3:json), updated_at = now()
      WHERE id = $1 AND organization_id = $2 AND type = 'inbound' AND status = 'RINGING' AND NOT legs ? 'browser'
      RETURNING *`, [callId, organizationId, browser]);
}

/** POST /v1/sandbox/calls/inbound with ring: true: a call from `from` to `to` (a number of the organization) rings
 *  the organization's listening browsers, as a SIP trunk's call does. Refusals are the API's errors; nothing is
 *  written for them. The caller's ring timeout is scheduled before the browsers ring. */
export async function ringSandboxInbound(rt: CallRuntime, o: { organizationId: string; from: string; to: string; talkSeconds: number; ringSeconds: number }): Promise<CallRow> {
  const { redis, key, queues } = rt.deps;
  const route = await routeInbound(rt, { to: o.to, from: o.from, ringSeconds: o.ringSeconds, organizationId: o.organizationId, talkSeconds: o.talkSeconds,
    claim: async () => undefined });
  switch (route.kind) {
    case 'unknown': throw new DomainError('not_found', `${o.to} is not an active number of your organization.`);
    case 'reject':
      throw new DomainError('state_conflict', `${o.to} rejects inbound calls (its inbound setting is reject): set it to softphone to ring browsers.`,
        { fields: { entity: 'phone_number', inbound: 'reject' } });
    case 'refused':
      throw new DomainError(route.code, route.code === 'channel_limit_exceeded'
        ? 'The organization\'s channels are all in use: the inbound call cannot ring.'
        : 'The organization\'s daily spend cap has no room for the inbound call.');
    case 'ringing': break;
  }
  const call = route.call;
  try {
    await scheduleSandboxRingTimeout(queues.get(CARRIER_EVENTS_QUEUE), call);
  } catch (err) {
    // Without its timeout nothing would end it: it ends now (CANCELED), its channel and spend released.
    await rt.transition(call.id, { type: 'hangup', mode: 'hangup', at: new Date() }, { bestEffort: true });
    throw err;
  }
  await publishIncoming(redis, key, {
    kind: 'ring', call_id: call.id, organization_id: call.organization_id, to_number: call.to_number, from_number: call.from_number,
    ring_timeout_seconds: call.ring_timeout_seconds,
  }).catch((err) => rt.deps.log.error({ err, call_id: call.id }, 'the inbound call could not ring the browsers: it rings until its timeout'));
  return call;
}

/** A browser took an inbound call (acceptInbound won): a sandbox call's caller answers now and hangs up after its
 *  talk time (shared/carriers/sandbox.ts); a SIP call is answered by its leg's owner on `taken` instead. */
export async function answerAccepted(rt: CallRuntime, call: CallRow): Promise<void> {
  if (call.carrier !== 'sandbox') return;
  const { queues } = rt.deps;
  await answerSandboxInbound(queues.get(CARRIER_EVENTS_QUEUE), queues.flowProducer(), call);
}

/** A committed-transition hook (CallRuntime): a sandbox inbound call that ended while it rang without a browser
 *  (nobody answered, it was hung up) stops ringing the browsers (`over`), as the SIP leg's owner says it for its own. */
export async function stopRingingWhenOver(rt: Pick<CallRuntime, 'deps'>, applied: { step: { result: string; ended: boolean }; call: CallRow; from: string }): Promise<void> {
  const c = applied.call;
  if (applied.step.result !== 'applied' || !applied.step.ended || c.type !== 'inbound' || c.carrier !== 'sandbox' || c.legs.browser) return;
  await publishIncoming(rt.deps.redis, rt.deps.key, { kind: 'over', call_id: c.id, organization_id: c.organization_id })
    .catch((err) => rt.deps.log.warn({ err, call_id: c.id }, 'browsers could not be told to stop ringing'));
}
