// Response schemas of Number Health, beside their views (policy.ts: policyView; fleet.ts: fleetItemView; sets.ts:
// setView, memberView; sessions.ts: sessionView, attemptView; attempts.ts: observationResultView, auditOf and
// inboundProgress; resolve.ts builds its Resolution in this shape). The route file declares them for OpenAPI and
// the response check.
import { Type } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import { ACTIONS, EVIDENCE_STATES } from './evidence.ts';

/** A string enum of the given values (the routes' request schemas use it too). */
export const lit = <T extends readonly string[]>(values: T, description: string) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], description });
const Ts = (description: string) => Type.String({ format: 'date-time', description });

export const EvidenceState = lit(EVIDENCE_STATES, 'CLEAN_OBSERVED (fresh LOW risk, complete setup, readiness met with recent handset '
  + 'evidence; not a cross-carrier guarantee), NEEDS_DATA (insufficient or stale evidence: unknown is not clean), WATCH (MEDIUM '
  + 'provider risk), FLAGGED (HIGH risk or recent negative handset evidence), SETUP_INCOMPLETE (still provisioning, or missing identity, '
  + 'registration with the call-analytics providers (/v1/number-registration) or monitoring), '
  + 'RETIRED (released number or retired set membership; history kept).');
const Warning = Nullable(Type.String(), 'Why the number is not clean, in words; null when CLEAN_OBSERVED.');
const Action = lit(ACTIONS, 'What to do next: NONE, COMPLETE_SETUP, REQUEST_REMEDIATION, MONITOR, FRESH_CHECK (a paid provider check, '
  + 'never requested automatically) or RUN_SPAM_TEST.');

// ---------------------------------------------------------------------------------------------------- policy
export const PolicyResponse = Type.Object({
  policy_version: Type.String({ description: 'Version of this policy.' }),
  thresholds: Type.Object({
    qualifying_human_calls: Type.Integer({ description: 'Qualifying human calls needed (after the UTC-day dedup).' }),
    consented_testers: Type.Integer({ description: 'Distinct consented testers needed.' }),
    active_days: Type.Integer({ description: 'Distinct UTC days with a qualifying call needed.' }),
    conversational_duration_seconds: Type.Integer({ description: 'Talk time a call needs to qualify.' }),
    clean_observation_carriers: Type.Array(Type.String(), { description: 'Carriers that each need a CLEAN observation.' }),
    verified_callback: Type.Boolean({ description: 'A verified callback (operator attestation) is needed.' }),
    provider_risk: Type.String({ description: 'The provider risk needed on every carrier, fresh.' }),
    no_recent_negative_display: Type.Boolean({ description: 'No recent negative display (wrong name, spam, scam, blocked, no ring).' }),
  }, { description: 'The readiness thresholds (the reference\'s Limits).' }),
  dedup: Type.Object({
    rule: Type.Literal('utc_calendar_day', { description: 'The dedup rule.' }),
    description: Type.String({ description: 'The rule in words.' }),
  }, { description: 'How repeated interactions count.' }),
  counted_modes: Type.Array(Type.String(), { description: 'Session modes whose evidence counts toward readiness.' }),
  freshness: Type.Object({
    provider_check_days: Type.Integer({ description: 'A provider answer older than this is stale (unknown, never clean).' }),
    handset_evidence_days: Type.Integer({ description: 'Handset evidence counts as recent for this many days.' }),
  }, { description: 'Freshness windows.' }),
  prices: Type.Object({
    currency: Type.String({ description: 'ISO currency of the prices.' }),
    fresh_check_cents: Type.Integer({ description: 'One paid fresh reputation check of one number (all carriers).' }),
    remediation_cents: Type.Object({
      own_brand: Type.Integer({ description: 'A remediation case under your own approved enterprise registration.' }),
      umbrella: Type.Integer({ description: 'A remediation case under the platform\'s umbrella registration.' }),
    }, { description: 'Remediation prices by kind.' }),
  }, { description: 'Current prices of the paid caller-trust operations (the amounts caller trust charges).' }),
}, { description: 'The Number Health policy.' });

// ---------------------------------------------------------------------------------------------------- fleet
const Met = (d: string) => Type.Object({ met: Type.Boolean({ description: 'Whether it is met.' }) }, { description: d });
const Count = (d: string) => Type.Object({
  required: Type.Integer({ description: 'The threshold.' }), observed: Type.Integer({ description: 'Counted so far.' }),
  met: Type.Boolean({ description: 'observed >= required.' }),
}, { description: d });
const CarrierRisk = Type.String({ description: 'LOW, MEDIUM, HIGH, UNAVAILABLE (provider had no answer), STALE or NOT_CHECKED.' });
export const ReadinessResponse = Type.Object({
  qualifying_human_calls: Count('Qualifying human calls (one per tester per UTC day).'),
  consented_testers: Count('Distinct consented testers with a qualifying call.'),
  active_days: Count('Distinct UTC days with a qualifying call.'),
  clean_observation_carriers: Type.Object({
    required: Type.Array(Type.String(), { description: 'Carriers needing a CLEAN observation.' }),
    observed: Type.Array(Type.String(), { description: 'Carriers with a qualifying CLEAN observation.' }),
    met: Type.Boolean({ description: 'Every required carrier observed clean.' }),
  }, { description: 'CLEAN observations per carrier (NUMBER_ONLY and LOCATION do not confirm the name).' }),
  verified_callback: Met('A verified callback attested by an operator.'),
  provider_risk: Type.Object({
    required: Type.String({ description: 'LOW.' }),
    carriers: Type.Object({ ATT: CarrierRisk, TMOBILE: CarrierRisk, VERIZON: CarrierRisk }, { description: 'The provider risk per carrier.' }),
    met: Type.Boolean({ description: 'Fresh LOW on every carrier.' }),
  }, { description: 'Provider risk.' }),
  no_recent_negative_display: Met('No carrier\'s latest handset observation is a recent negative display.'),
  met: Type.Boolean({ description: 'Every threshold met.' }),
}, { description: 'Readiness progress against each policy threshold.' });

export const ObservationResponse = Type.Object({
  carrier: Type.String({ description: 'The tester\'s carrier.' }),
  outcome: Type.String({ description: 'What the handset showed (CLEAN, NUMBER_ONLY, LOCATION, WRONG_NAME, SPAM, SCAM, BLOCKED, NO_RING, UNKNOWN).' }),
  observed_label: Type.String({ description: 'The exact display text.' }),
  observed_at: Ts('When the call was made (the display was seen).'),
  duration_seconds: Nullable(Type.Integer(), 'Talk time of the call.'),
  callback_verified: Type.Boolean({ description: 'Whether an operator attested a verified callback on this attempt.' }),
  attempt_id: Type.String({ description: 'The attempt carrying the observation.' }),
  mode: Type.String({ description: 'Mode of the session (CONNECTIVITY_QA observations are synthetic and not shown here).' }),
}, { description: 'The latest handset observation of one carrier.' });

export const MembershipResponse = Type.Object({
  number_set_id: Type.String({ description: 'The Number Set.' }),
  role: Type.String({ description: 'PRIMARY or ALTERNATE.' }),
  state: Type.String({ description: 'ACTIVE, STANDBY, PREPARING or RETIRED.' }),
  outbound_enabled: Type.Boolean({ description: 'Whether the member may be selected for outbound calls.' }),
  priority: Type.Integer({ description: 'Selection priority (lower first).' }),
}, { description: 'A set membership.' });

export const FleetItemResponse = Type.Object({
  phone_id: Type.Integer({ description: 'The phone number id (GET /v1/phone-numbers).' }),
  phone_number: Type.String({ description: 'The number (E.164).' }),
  number_status: Type.String({ description: 'PROVISIONING, ACTIVE or RELEASED.' }),
  area_code: Type.String({ description: 'Its area code.' }),
  team_id: Nullable(Type.String(), 'The team the number belongs to; null: none.'),
  identity: Type.Object({
    status: Type.String({ description: 'COMPLETE or INCOMPLETE.' }),
    missing: Type.Array(Type.String(), { description: 'What is missing: identity (CNAM display name), registration (the number is '
      + 'not registered with the call-analytics providers: /v1/number-registration), monitoring.' }),
    cnam_display_name: Type.String({ description: 'The CNAM display name.' }),
    cnam_status: Type.String({ description: 'pending, registered or failed.' }),
    monitoring_enrolled_at: Nullable(Ts('When reputation monitoring started.'), 'When reputation monitoring started; null: not enrolled.'),
    registration_status: Type.String({ description: 'The number\'s registration with the call-analytics providers: not_registered, '
      + 'pending, registered or rejected (GET /v1/number-registration/{phone_id}).' }),
  }, { description: 'Identity, registration and monitoring setup.' }),
  provider_scores: Type.Array(Type.Object({
    carrier: Type.String({ description: 'ATT, TMOBILE or VERIZON.' }),
    risk_level: Nullable(Type.String(), 'LOW, MEDIUM or HIGH; null: the provider had no answer (unavailable, not zero risk).'),
    displayed_label: Nullable(Type.String(), 'What the provider saw displayed; null: unknown.'),
    provider: Type.String({ description: 'The reputation provider.' }),
    checked_at: Ts('When the provider answered.'),
    fresh: Type.Boolean({ description: 'Within the provider freshness window.' }),
  }, { description: 'One provider answer.' }), { description: 'Provider scores and freshness per carrier (no row: never checked).' }),
  set_memberships: Type.Array(MembershipResponse, { description: 'The Number Sets the number belongs to.' }),
  observations: Type.Array(ObservationResponse, { description: 'The latest handset observation per carrier.' }),
  evidence_state: EvidenceState,
  health_warning: Warning,
  recommended_action: Action,
  readiness: ReadinessResponse,
}, { description: 'Number evidence.' });

// ---------------------------------------------------------------------------------------------------- sets
export const MemberResponse = Type.Object({
  phone_id: Type.Integer({ description: 'The phone number id.' }),
  phone_number: Type.String({ description: 'The number (E.164).' }),
  role: Type.String({ description: 'PRIMARY or ALTERNATE.' }),
  state: Type.String({ description: 'ACTIVE, STANDBY, PREPARING or RETIRED.' }),
  outbound_enabled: Type.Boolean({ description: 'May be selected for outbound calls.' }),
  priority: Type.Integer({ description: 'Selection priority, lower first.' }),
  updated_at: Ts('When the membership last changed.'),
}, { description: 'A member.' });
export const NumberSetResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The set id (number_set_id on POST /v1/calls/dial).' }),
  name: Type.String({ description: 'The set\'s name.' }),
  use_case: Type.String({ description: 'What the numbers are used for.' }),
  identification_guidance: Type.String({ description: 'How recipients should recognize these calls.' }),
  members: Type.Array(MemberResponse, { description: 'Members by priority.' }),
  created_by_user_id: Type.String({ description: 'The user who created the set.' }),
  updated_by_user_id: Type.String({ description: 'The user who last changed it.' }),
  created_at: Ts('When it was created.'),
  updated_at: Ts('When it last changed.'),
}, { description: 'A Number Set.' });

export const ResolutionResponse = Type.Object({
  number_set_id: Type.String({ description: 'The set resolved.' }),
  phone_id: Type.Integer({ description: 'The selected number\'s id.' }),
  from_number: Type.String({ description: 'The selected caller ID (E.164).' }),
  evidence_state: EvidenceState,
  health_warning: Warning,
  recommended_action: Action,
  selection_source: Type.Literal('number_set_sticky_health', { description: 'How it was chosen.' }),
  eligible_members: Type.Integer({ description: 'How many members were eligible.' }),
}, { description: 'The caller ID the set resolves to for this destination (a preview: nothing is reserved).' });

// ---------------------------------------------------------------------------------------------------- sessions
export const AttemptResponse = Type.Object({
  id: Type.String({ description: 'The attempt id.' }),
  session_id: Type.String({ description: 'Its session.' }),
  phone_id: Type.Integer({ description: 'The queued number tested.' }),
  call_id: Type.String({ description: 'The attached call.' }),
  call_direction: Nullable(Type.String(), 'outbound (the number called the tester) or inbound (the tester called the number).'),
  call_status: Nullable(Type.String(), 'The call\'s status when read.'),
  duration_seconds: Nullable(Type.Integer(), 'The call\'s talk time.'),
  created_by_user_id: Type.String({ description: 'Who attached it.' }),
  created_at: Ts('When it was attached.'),
  observation: Nullable(Type.Object({
    outcome: Type.String({ description: 'What the handset showed.' }),
    observed_label: Type.String({ description: 'The exact display text.' }),
    handset: Type.Object({
      manufacturer: Type.String({ description: 'Handset manufacturer.' }), model: Type.String({ description: 'Handset model.' }),
      os: Type.String({ description: 'Operating system.' }),
    }, { description: 'The handset.' }),
    recorded_at: Ts('When it was recorded.'),
    recorded_by_user_id: Type.String({ description: 'Who recorded it.' }),
  }, { description: 'The observation.' }), 'The observation; null until posted.'),
  callback_verified: Type.Boolean({ description: 'An operator attested a verified callback.' }),
  callback_attestation: Nullable(Type.Object({
    attested_by_user_id: Type.String({ description: 'The attesting operator.' }),
    attested_at: Ts('When.'),
  }, { description: 'Who attested callback_verified, and when.' }), 'The attestation; null: never attested.'),
}, { description: 'A spam-test attempt.' });
export const SessionResponse = Type.Object({
  id: Type.String({ description: 'The session id.' }),
  status: Type.String({ description: 'ACTIVE (initial), PAUSED, COMPLETED or CANCELLED.' }),
  mode: Type.String({ description: 'RAPID_AUDIT, HUMAN_READINESS or CONNECTIVITY_QA.' }),
  tester: Type.Object({
    alias: Type.String({ description: 'The tester\'s alias.' }), phone_number: Type.String({ description: 'The tester\'s phone (E.164).' }),
    carrier: Type.String({ description: 'The tester\'s carrier.' }), consented: Type.Boolean({ description: 'Whether the tester consented.' }),
  }, { description: 'The tester.' }),
  scope: Type.Object({
    kind: Type.String({ description: 'ALL, TEAM, NUMBER_SET, AREA_CODE, FLAGGED or NEEDS_DATA.' }),
    value: Nullable(Type.String(), 'The team id, set id or area code; null for the other kinds.'),
  }, { description: 'What the queue was built from.' }),
  compare_alternates: Type.Boolean({ description: 'Whether ALTERNATE members were queued too.' }),
  counts_toward_readiness: Type.Boolean({ description: 'Whether this mode\'s evidence counts toward readiness (HUMAN_READINESS only).' }),
  phone_ids: Type.Array(Type.Integer(), { description: 'The queue saved at creation.' }),
  attempts: Type.Array(AttemptResponse, { description: 'Attempts, oldest first.' }),
  created_by_user_id: Type.String({ description: 'Who started it.' }),
  created_at: Ts('When it started.'),
  updated_at: Ts('When its status last changed.'),
}, { description: 'A spam-test session.' });

export const AuditResponse = Type.Array(Type.Object({
  recorded_by_user_id: Type.String({ description: 'Who posted it.' }),
  before: Nullable(Type.Object({}, { additionalProperties: true, description: 'The observation before.' }), 'The observation before; null for the first.'),
  after: Type.Object({}, { additionalProperties: true, description: 'The observation after (outcome, observed_label, handset, callback_verified).' }),
  recorded_at: Ts('When.'),
}, { description: 'One posting.' }), { description: 'Every posting of the observation, oldest first (before/after snapshots).' });
export const InboundResponse = Type.Object({
  session_id: Type.String({ description: 'The session.' }),
  phone_id: Type.Integer({ description: 'The queued number.' }),
  phone_number: Type.String({ description: 'Its number (E.164).' }),
  tester_phone_number: Type.String({ description: 'The tester\'s phone.' }),
  call_id: Nullable(Type.String(), 'The latest call from the tester to the number since the session started; null: none yet.'),
  attempt_id: Nullable(Type.String(), 'The attempt it is attached to; null: not attached.'),
  status: Type.String({ description: 'The call\'s status, or WAITING before any call.' }),
  answered_at: Nullable(Ts('When answered.'), 'When answered; null: not answered.'),
  ended_at: Nullable(Ts('When it ended.'), 'When it ended; null: live or none.'),
  duration_seconds: Nullable(Type.Integer(), 'Talk time; null: none yet.'),
  callback_verified: Type.Boolean({ description: 'Whether an operator attested the callback on its attempt.' }),
  human: Type.Boolean({ description: 'Whether a person answered a human (non-AI) call.' }),
}, { description: 'Inbound progress of one queued number.' });

export const ObservationResultResponse = Type.Object({ attempt: AttemptResponse, audit: AuditResponse }, { description: 'The attempt and its observation history.' });
