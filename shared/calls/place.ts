// Placing a call (POST /v1/calls/dial and POST /v1/calls): the guardrails in their fixed order, channel admission,
// one insert transaction, the dial job. A rejected call leaves no row and holds no channel.
//
//   1 validation         destination_missing; a short code (911, 112, +44999, ...) is 403 destination_blocked
//                        here, before the E.164 check; destination_invalid, validation_error
//   2 key ceiling        403 forbidden (from/to outside the credential's bounds)
//   3 destination rules  403 destination_blocked (emergency, special service, premium, special rate,
//                        international unless the organization allows the country, demo keys outside the
//                        sandbox's numbers); destination_invalid for numbers in no assigned range
//   4 caller ID          422 call_id_not_verified (not a number of the organization nor a verified caller ID,
//                        or a caller ID pending verification), 409 caller_id_held_elsewhere (a caller ID whose
//                        number another organization holds), 409 no_active_number (still provisioning)
//   4b plan, compliance  402 no_active_subscription / voice_usage_exhausted, 403/429 dnc_suppressed ...
//                        frequency_exceeded (shared/compliance/guard.ts; reserves nothing)
//   5 call rate          429 rate_limited (category account_limit)
//   6 daily spend cap    402 spend_cap_reached: reserves what the call may cost (shared/spend), released if a
//                        later step refuses it
//   7 channels           409 channel_limit_exceeded (category account_limit)
import type { Principal } from '../accounts/principal.ts';
import type { WithinTx } from '../db.ts';
import { usableCallerIds } from '../caller-ids/standing.ts';
import { assertFactsAllow } from '../compliance/guard.ts';
import { DomainError, validationError } from '../errors.ts';
import { uuidv7 } from '../ids.ts';
import { assertNumberWithin } from '../sub-entities/limit.ts';
import { assertSubEntityOf } from '../sub-entities/sub-entities.ts';
import { callerIdEvidence, type CallerIdEvidence } from '../number-health/resolve.ts';
import { isE164, parseE164, type ParsedNumber } from '../phone/e164.ts';
import { assertWithinBounds } from '../tokens/bounds.ts';
import { BLOCK_MESSAGES, classifyDestination, isDemoDestination, shortCodeVerdict } from './destinations.ts';
import { effectiveMaxCallMinutes, spendDay } from './limits.ts';
import { readPlacement } from './placement-read.ts';
import { minimumCents, reservedTalkSeconds, worstCaseCents } from './pricing.ts';
import { CHANNELS, RING_TIMEOUT_SECONDS, type AgentSettings, type CallRow, type CallType, type Leg, type Legs } from './model.ts';
import type { CallRuntime } from './runtime.ts';

export interface PlaceRequest {
  type: CallType;
  from?: string;
  to?: string;
  connect?: string;
  record: boolean;
  agent?: AgentSettings;
  /** The sub-entity the request names (sub_entity_id); without it the call takes its from_number's. A number's
   *  sub-entity is binding: naming another one is a validation_error (a HIPAA boundary cannot be stepped around). */
  subEntityId?: string | null;
  /** Answer the caller ID's Number Health evidence (the dial path's reply carries it). */
  withEvidence?: boolean;
  /** Wire names of the caller-ID and destination fields in this request (for `fields` of errors). */
  names: { from: string; to: string };
  /** The request's time (ms; the gateway's clock, which selected the caller ID too); default: now. */
  at?: number;
}

export interface Placed {
  call: CallRow;
  /** With withEvidence: the caller ID's evidence; null for a verified caller ID (not a number of the organization). */
  callerId: CallerIdEvidence | null;
}

const blocked = (field: string, message: string, hint?: string) =>
  new DomainError('destination_blocked', `${field} ${message}.`, { fields: { [field]: message }, resolutionHint: hint });

/** `within` commits with the call row (a request's idempotency record). */
export async function placeCall(rt: CallRuntime, p: Principal, req: PlaceRequest, within?: WithinTx<Placed>): Promise<Placed> {
  const { db, key } = rt.deps;
  const F = req.names.from;
  const T = req.names.to;
  if (req.type === 'ai' && !rt.profile.agentCalls) {
    throw new DomainError('service_unavailable', `AI calls are not available with the ${rt.profile.name} carrier: the voice-agent media pipeline they need does not exist yet.`,
      { resolutionHint: 'Place bridge calls (POST /v1/calls/dial) with this carrier; AI calls run with the sandbox carrier.' });
  }

  // 1. Validation. Each number is parsed once, here; the rules below read the parsed numbers.
  if (req.to === undefined || req.to === '') {
    throw new DomainError('destination_missing', `No destination: ${T} is required.`, { fields: { [T]: 'is required' } });
  }
  // Emergency and other short codes are refused as such, not as malformed numbers.
  for (const [field, n] of [[T, req.to], ['connect_number', req.type === 'bridge' ? req.connect : undefined]] as const) {
    const v = n === undefined ? null : shortCodeVerdict(n);
    if (v && !v.ok && v.code === 'destination_blocked') throw blocked(field, BLOCK_MESSAGES[v.reason]);
  }
  const to = parseE164(req.to);
  if (!to) {
    throw new DomainError('destination_invalid', `${T} is not a valid dialable E.164 number.`,
      { fields: { [T]: 'must be a dialable E.164 number, e.g. +14155550123' } });
  }
  if (req.from === undefined) {
    throw validationError({ [F]: 'is required (the caller ID, an E.164 number of your organization)' });
  }
  if (!isE164(req.from)) throw validationError({ [F]: 'must be an E.164 number, e.g. +14155550123' });
  let connect: Readonly<ParsedNumber> | null = null;
  if (req.type === 'bridge') {
    if (req.connect === undefined) {
      throw validationError({ connect_number: 'is required: the phone rung first and bridged to to_number' });
    }
    connect = parseE164(req.connect);
    if (!connect) {
      throw new DomainError('destination_invalid', 'connect_number is not a valid dialable E.164 number.',
        { fields: { connect_number: 'must be a dialable E.164 number' } });
    }
  }
  const dialed: [string, Readonly<ParsedNumber>][] = [[T, to], ...(connect ? [['connect_number', connect] as [string, Readonly<ParsedNumber>]] : [])];

  // 2. Key ceiling.
  assertWithinBounds(p, [F, req.from], dialed.map(([field, n]) => [field, n.e164]));

  // Everything the next steps read from PostgreSQL, in one round trip.
  const now = new Date(req.at ?? Date.now());
  const { limits: org, evidence, compliance, callerId: callerIdFacts } = await readPlacement(db, p.organizationId, req.from, to.e164, now.getTime());

  // A credential limited to a sub-entity places calls only from that sub-entity's numbers (so the call lands in it).
  assertNumberWithin(p, org.phone_sub_entity_id, F, req.from);
  // The call's sub-entity: its from_number's; a named one must be the organization's and agree with the number's.
  const subEntityId = org.phone_sub_entity_id ?? req.subEntityId ?? null;
  if (req.subEntityId != null && req.subEntityId !== org.phone_sub_entity_id) {
    if (org.phone_sub_entity_id !== null) {
      throw validationError({ sub_entity_id: `must be ${org.phone_sub_entity_id}, the sub-entity of ${req.from} (or omitted)` });
    }
    await assertSubEntityOf(db, p.organizationId, req.subEntityId);
  }

  // 3. Destination rules.
  for (const [field, n] of dialed) {
    const v = classifyDestination(n, org.allow_countries);
    if (v.ok) continue;
    if (v.code === 'destination_invalid') {
      throw new DomainError('destination_invalid', `${field} is not a valid dialable number.`, { fields: { [field]: 'is not a dialable number' } });
    }
    throw blocked(field, BLOCK_MESSAGES[v.reason], v.reason === 'international'
      ? `An administrator can allow ${v.country}: admin org limits --org <id> --allow-countries ${v.country}` : undefined);
  }
  if (p.isDemo) {
    for (const [field, n] of dialed) {
      if (!isDemoDestination(n)) {
        throw blocked(field, 'is not on the demo allowlist (demo keys may only call the sandbox\'s 555 numbers)',
          'Use a sandbox number such as +14155550100, or a production key.');
      }
    }
  }

  // 4. Caller ID ownership: a number of the organization, or one of its verified caller IDs (a pending one is 422,
  // one another organization holds now is 409).
  const verified = org.phone_id === null && usableCallerIds([[F, req.from]], callerIdFacts ? [callerIdFacts] : []).has(req.from);
  if (org.phone_id === null && !verified) {
    throw new DomainError('call_id_not_verified', `${req.from} is not a number of your organization.`,
      { fields: { [F]: 'is not an active number owned by your organization' },
        resolutionHint: 'Use one of the numbers listed by GET /v1/phone-numbers.' });
  }
  if (!verified && org.phone_status !== 'ACTIVE') {
    throw new DomainError('no_active_number', `${req.from} is not active yet (${org.phone_status}).`,
      { fields: { [F]: `is ${org.phone_status?.toLowerCase()}, not active` }, resolutionHint: 'Retry once the number is active.' });
  }

  // 4b. Plan and call compliance of the destination.
  assertFactsAllow(compliance, T, { now: () => now.getTime() });
  // The caller ID's evidence: cached, else computed now (nothing is reserved yet, so a failure here holds nothing).
  const callerId = req.withEvidence && org.phone_id !== null
    ? await callerIdEvidence(db, p.organizationId, org.phone_id, evidence, now.getTime()) : null;

  // 5. Call rate.
  const rate = await rt.callRate.take(key('calls', 'rate', p.organizationId), org.calls_per_minute);
  if (!rate.allowed) {
    throw new DomainError('rate_limited', `Your organization may place ${org.calls_per_minute} calls per minute; retry after ${rate.resetSeconds} s.`,
      { category: 'account_limit', retryAfterSeconds: rate.resetSeconds });
  }

  // 6. Daily spend cap: reserve the most this call can cost within its call-length limit, or what is left of the
  // cap when that is less (the call then ends when its reservation is used: its limit deadline, machine.ts).
  const id = uuidv7(now.getTime());
  const price = rt.profile.pricePerMinuteCents;
  const lengthLimitSeconds = effectiveMaxCallMinutes(org.max_call_minutes, org.phone_max) * 60;
  const day = spendDay(now);
  const spend = await rt.spend.reserve(p.organizationId, day, id, {
    worstCents: worstCaseCents(req.type, lengthLimitSeconds, RING_TIMEOUT_SECONDS, price),
    minimumCents: minimumCents(req.type, price), capCents: org.daily_spend_cap_cents, now: now.getTime(),
  });
  if (!spend.admitted) {
    throw new DomainError('spend_cap_reached',
      `Today's call spend (${spend.settled} cents settled, ${spend.reserved} cents reserved by calls in progress) leaves less than this call's first minute (${minimumCents(req.type, price)} cents) under the daily cap of ${org.daily_spend_cap_cents} cents.`,
      { resolutionHint: 'The cap resets at 00:00 UTC; an administrator can raise it.' });
  }
  const reservedCents = spend.reservedCents;
  const releaseSpend = () => rt.spend.settle(p.organizationId, day, id, -1).catch(() => undefined);

  // 7. Channels.
  const channels = CHANNELS[req.type];
  const adm = await rt.channels.admit(p.organizationId, id, channels, org.channel_limit, now.getTime());
  if (!adm.admitted) {
    await releaseSpend();
    throw new DomainError('channel_limit_exceeded',
      `This call needs ${channels} channel${channels > 1 ? 's' : ''}; ${adm.used} of your ${org.channel_limit} are in use.`,
      { resolutionHint: 'Retry when a call ends, or ask for a higher channel limit. Calls do not queue.' });
  }

  let call: CallRow;
  try {
    const leg = (role: Leg['role'], number: string): Leg =>
      ({ role, number, status: 'PENDING', reason: null, originated_at: null, answered_at: null, ended_at: null });
    const legs: Legs = connect
      ? { connect: leg('connect', connect.e164), destination: leg('destination', to.e164) }
      : { destination: leg('destination', to.e164) };
    // Browser calls (webrtc, room): the softphone is a leg too, connected when its ticket is redeemed.
    if (req.type === 'webrtc' || req.type === 'room') legs.browser = leg('browser', `browser:${p.userId ?? p.keyId}`);
    call = await rt.inserts.insert({
      id, organization_id: p.organizationId, api_key_id: p.kind === 'api_key' ? p.keyId : null, user_id: p.userId,
      type: req.type, from_number: req.from, to_number: to.e164, connect_number: connect?.e164 ?? null,
      phone_number_id: org.phone_id, sub_entity_id: subEntityId, agent_id: req.agent?.id ?? null, agent: req.agent ?? null, record: req.record,
      legs, channels, carrier: rt.profile.name, time_scale: rt.profile.timeScale,
      max_duration_seconds: Math.min(lengthLimitSeconds, reservedTalkSeconds(req.type, reservedCents, price)),
      spend_reserved_cents: reservedCents,
      ring_timeout_seconds: RING_TIMEOUT_SECONDS, price_cents_per_minute: rt.profile.pricePerMinuteCents, created_at: now,
    }, within && ((tx, row) => within(tx, { call: row, callerId })));
  } catch (err) {
    await rt.channels.release(p.organizationId, id).catch(() => undefined);
    await releaseSpend();
    throw err;
  }
  // Published before the dial job exists, so a call stream sees QUEUED before RINGING.
  await rt.announce(call);
  // Path A (webrtc) dials only once the browser redeems its ticket on the signaling WebSocket.
  if (req.type === 'webrtc') return { call, callerId };
  try {
    await rt.queues.enqueueDial(id, { organizationId: p.organizationId, spendDay: day });
  } catch (err) {
    // The call is recorded; the reconciler enqueues dial jobs of calls left QUEUED.
    rt.deps.log.error({ err, call_id: id }, 'dial job not enqueued; the reconciler will retry');
  }
  return { call, callerId };
}
