import { Type } from '@sinclair/typebox';
import { OPEN_SCOPE } from '../../shared/sub-entities/content-policy.ts';
import { callView } from '../../shared/calls/views.ts';
import {
  createAttempt, inboundProgress, observationResultView, recordObservation, type ObservationResult,
} from '../../shared/number-health/attempts.ts';
import { attributedUser } from '../../shared/number-health/attribution.ts';
import { fleetItemView, fleetPage } from '../../shared/number-health/fleet.ts';
import { OUTCOMES, policyView, TESTER_NETWORKS } from '../../shared/number-health/policy.ts';
import { resolveNumberSet } from '../../shared/number-health/resolve.ts';
import { INBOUND_OUTCOMES, sandboxInboundCall } from '../../shared/number-health/sandbox-inbound.ts';
import { SANDBOX_INBOUND_TALK_MAX, SANDBOX_INBOUND_TALK_SECONDS } from '../../shared/carriers/sandbox.ts';
import {
  AttemptResponse, EvidenceState, FleetItemResponse, InboundResponse, lit, NumberSetResponse, ObservationResultResponse, PolicyResponse,
  ResolutionResponse, SessionResponse,
} from '../../shared/number-health/schemas.ts';
import {
  attemptView, changeSessionStatus, createSession, getSession, MODES, SCOPE_KINDS, SESSION_STATUSES, sessionView,
  type AttemptRow, type SessionRow,
} from '../../shared/number-health/sessions.ts';
import { createSet, deleteSet, getSet, listSets, MEMBER_ROLES, MEMBER_STATES, removeMember, setView, updateSet, type SetRow } from '../../shared/number-health/sets.ts';
import { DomainError } from '../../shared/errors.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Plugin } from '../http/types.ts';
import { Call } from './calls.ts';
import { ListMeta, UuidIdParams } from './schemas.ts';

const TAG = 'Number Health';
const E164 = (description: string) => Type.String({ pattern: '^\\+[1-9][0-9]{6,14}$', description });

// ---------------------------------------------------------------------------------------------------- fleet
const FLEET_EXAMPLE = {
  phone_id: 42, phone_number: '+14155550123', number_status: 'ACTIVE', area_code: '415', team_id: 'sales',
  identity: { status: 'COMPLETE', missing: [], cnam_display_name: 'Acme Dental', cnam_status: 'registered', monitoring_enrolled_at: '2026-11-01T10:00:00.000Z',
    registration_status: 'registered' },
  provider_scores: [{ carrier: 'ATT', risk_level: 'LOW', displayed_label: 'Acme Dental', provider: 'sandbox', checked_at: '2026-11-22T09:00:00.000Z', fresh: true }],
  set_memberships: [{ number_set_id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f71', role: 'PRIMARY', state: 'ACTIVE', outbound_enabled: true, priority: 100 }],
  observations: [],
  evidence_state: 'NEEDS_DATA',
  health_warning: 'Provider risk unknown on TMOBILE (not checked), VERIZON (not checked): unknown is not clean.',
  recommended_action: 'FRESH_CHECK',
  readiness: {
    qualifying_human_calls: { required: 8, observed: 0, met: false }, consented_testers: { required: 5, observed: 0, met: false },
    active_days: { required: 4, observed: 0, met: false },
    clean_observation_carriers: { required: ['ATT', 'TMOBILE', 'VERIZON'], observed: [], met: false },
    verified_callback: { met: false },
    provider_risk: { required: 'LOW', carriers: { ATT: 'LOW', TMOBILE: 'NOT_CHECKED', VERIZON: 'NOT_CHECKED' }, met: false },
    no_recent_negative_display: { met: true }, met: false,
  },
};

// ---------------------------------------------------------------------------------------------------- sets
const MemberIn = Type.Object({
  phone_id: Type.Integer({ minimum: 1, description: 'An owned phone number id.' }),
  role: Type.Optional(lit(MEMBER_ROLES, 'PRIMARY or ALTERNATE (new members: PRIMARY).')),
  state: Type.Optional(lit(MEMBER_STATES, 'ACTIVE, STANDBY, PREPARING or RETIRED (new members: ACTIVE). RETIRED only takes the number out of selection.')),
  outbound_enabled: Type.Optional(Type.Boolean({ description: 'May be selected for outbound calls (new members: true).' })),
  priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000, description: 'Selection priority, lower first (new members: 100).' })),
}, { additionalProperties: false, description: 'A member to add or change (upserted by phone_id).' });
const setFields = {
  name: Type.String({ minLength: 1, maxLength: 100, description: 'The set\'s name.' }),
  use_case: Type.String({ maxLength: 200, description: 'What the numbers are used for.' }),
  identification_guidance: Type.String({ maxLength: 2000, description: 'How recipients should recognize these calls (for testers and agents).' }),
  members: Type.Array(MemberIn, { maxItems: 5000, description: 'Members, upserted by phone_id; omitted members are kept.' }),
};
const SET_ID = '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f71';
const USER_ID = '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f72';
const SET_EXAMPLE = {
  id: SET_ID, name: 'Appointment reminders', use_case: 'reminders', identification_guidance: 'Shows as Acme Dental.',
  members: [{ phone_id: 42, phone_number: '+14155550123', role: 'PRIMARY', state: 'ACTIVE', outbound_enabled: true, priority: 100, updated_at: '2026-11-20T15:04:05.000Z' }],
  created_by_user_id: USER_ID, updated_by_user_id: USER_ID, created_at: '2026-11-20T15:04:05.000Z', updated_at: '2026-11-20T15:04:05.000Z',
};

// ---------------------------------------------------------------------------------------------------- sessions
const Handset = Type.Object({
  manufacturer: Type.String({ minLength: 1, maxLength: 100, description: 'Handset manufacturer.' }),
  model: Type.String({ minLength: 1, maxLength: 100, description: 'Handset model.' }),
  os: Type.String({ minLength: 1, maxLength: 100, description: 'Operating system and version.' }),
}, { additionalProperties: false, description: 'The tester\'s handset.' });
const SESSION_ID = '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f73';
const ATTEMPT_ID = '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f74';
const CALL_ID = '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98';
const ATTEMPT_EXAMPLE = {
  id: ATTEMPT_ID, session_id: SESSION_ID, phone_id: 42, call_id: CALL_ID, call_direction: 'outbound', call_status: 'COMPLETED',
  duration_seconds: 75, created_by_user_id: USER_ID, created_at: '2026-11-20T15:06:00.000Z', observation: null,
  callback_verified: false, callback_attestation: null,
};
const SESSION_EXAMPLE = {
  id: SESSION_ID, status: 'ACTIVE', mode: 'HUMAN_READINESS',
  tester: { alias: 'tester-1', phone_number: '+12125550187', carrier: 'VERIZON', consented: true },
  scope: { kind: 'NUMBER_SET', value: SET_ID }, compare_alternates: false, counts_toward_readiness: true, phone_ids: [42],
  attempts: [], created_by_user_id: USER_ID, created_at: '2026-11-20T15:04:05.000Z', updated_at: '2026-11-20T15:04:05.000Z',
};
const SessionIdParams = UuidIdParams('session');
const INBOUND_CALL_EXAMPLE = {
  id: CALL_ID, type: 'inbound', direction: 'inbound', from_number: '+12125550187', to_number: '+14155550123', connect_number: null,
  agent_id: null, status: 'COMPLETED', call_outcome: 'answered', failure_code: null, failure_category: null,
  disconnection_reason: 'remote_hangup', picked_up: true, duration_seconds: 75, record: false, cost_cents: 0, max_duration_seconds: 10800, issued_by_user_id: null, api_key_id: null, sub_entity_id: null,
  created_at: '2026-11-20T15:05:00.000Z', answered_at: '2026-11-20T15:05:03.000Z', ended_at: '2026-11-20T15:06:18.000Z',
  legs: [{ role: 'destination', number: '+14155550123', status: 'ENDED', end_reason: 'completed', originated_at: '2026-11-20T15:05:00.000Z',
    answered_at: '2026-11-20T15:05:03.000Z', ended_at: '2026-11-20T15:06:18.000Z' }],
};
const needsUser = 'Needs a credential with an associated user (user_required otherwise).';

export const numberHealthRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/number-health/policy', scope: 'caller_trust:read', tag: TAG, summary: 'Read the Number Health policy',
    description: 'The readiness thresholds, the UTC calendar-day dedup rule, the freshness windows and the current prices of a '
      + 'fresh (paid) reputation check and of remediation (the amounts caller trust charges). Read-only.',
    examples: { response: { data: policyView() } },
    response: { status: 200, schema: Type.Object({ data: PolicyResponse }) },
    handler: async () => ({ status: 200, body: { data: policyView() } }),
  });

  routes.add({
    method: 'GET', path: '/v1/number-health/numbers', scope: 'caller_trust:read', tag: TAG, summary: 'List number evidence',
    description: 'Per number of the organization (held or released): identity setup, provider scores and freshness, set '
      + 'memberships, the latest handset observation per carrier, evidence_state, health_warning, recommended_action and '
      + 'readiness progress against each threshold of the policy. Filters combine; newest number first, cursor-paginated. '
      + 'Reads stored evidence only: never requests a paid check.',
    examples: { response: { data: [FLEET_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object({
      ...PageQuery,
      team_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only numbers of this team.' })),
      number_set_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only members of this Number Set (RETIRED there shows as RETIRED).' })),
      area_code: Type.Optional(Type.String({ pattern: '^[0-9]{3}$', description: 'Only numbers of this area code.' })),
      state: Type.Optional(EvidenceState),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(FleetItemResponse, { description: 'Number evidence, newest number first.' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const { team_id, number_set_id, area_code, state, ...pq } = query;
      const list = `number-health:${JSON.stringify([team_id, number_set_id, area_code, state])}`;
      const page = deps.cursors.params(list, pq);
      const now = deps.clock.now();
      const rows = await fleetPage(deps.db, principal.organizationId, { team_id, number_set_id, area_code, state }, page, now);
      const out = deps.cursors.page(list, page, rows, (r) => r.facts.id);
      return { status: 200, body: { data: out.data.map((r) => fleetItemView(r, now)), meta: out.meta } };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/number-health/sets', scope: 'phone_numbers:write', tag: TAG, summary: 'Create a Number Set',
    description: 'Creates a Number Set with its members (each an owned number; defaults PRIMARY, ACTIVE, outbound_enabled, '
      + `priority 100). Answers 201. ${needsUser}`,
    examples: { request: { name: SET_EXAMPLE.name, use_case: 'reminders', identification_guidance: 'Shows as Acme Dental.', members: [{ phone_id: 42, role: 'PRIMARY', priority: 100 }] },
      response: { data: SET_EXAMPLE } },
    body: Type.Object({ name: setFields.name, use_case: Type.Optional(setFields.use_case),
      identification_guidance: Type.Optional(setFields.identification_guidance), members: Type.Optional(setFields.members) },
    { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: NumberSetResponse }) },
    errors: ['user_required'],
    handler: async (ctx) => {
      const user = attributedUser(ctx.principal);
      const reply = (s: SetRow) => ({ status: 201, body: { data: setView(s) } });
      return reply(await createSet(ctx.deps.db, ctx.principal.organizationId, user, ctx.body, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/number-health/sets', scope: 'caller_trust:read', tag: TAG, summary: 'List Number Sets',
    description: 'The organization\'s Number Sets with their members, newest first; meta.total_results counts them all.',
    examples: { response: { data: [SET_EXAMPLE], meta: { page_size: 20, total_results: 1 } } },
    query: Type.Object(PageQuery, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(NumberSetResponse, { description: 'The sets.' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('number-sets', query);
      const { rows, total } = await listSets(deps.db, principal.organizationId, page);
      const out = deps.cursors.page('number-sets', page, rows, (s) => s.id, total);
      return { status: 200, body: { data: out.data.map(setView), meta: out.meta } };
    },
  });
  routes.add({
    method: 'GET', path: '/v1/number-health/sets/{id}', scope: 'caller_trust:read', tag: TAG, summary: 'Read a Number Set',
    description: 'One Number Set of the organization with its members.',
    examples: { response: { data: SET_EXAMPLE } },
    params: UuidIdParams('Number Set'), response: { status: 200, schema: Type.Object({ data: NumberSetResponse }) },
    handler: async ({ deps, principal, params }) => ({ status: 200, body: { data: setView(await getSet(deps.db, principal.organizationId, params.id)) } }),
  });
  routes.add({
    method: 'PATCH', path: '/v1/number-health/sets/{id}', scope: 'phone_numbers:write', tag: TAG, summary: 'Change a Number Set',
    description: 'Changes the fields given; members are upserted by phone_id (given fields change, omitted members and '
      + 'fields stay). state RETIRED takes a member out of selection only: no release, no billing or inbound change, no '
      + `history deletion. ${needsUser}`,
    examples: { request: { members: [{ phone_id: 42, state: 'RETIRED' }] },
      response: { data: { ...SET_EXAMPLE, members: [{ ...SET_EXAMPLE.members[0], state: 'RETIRED' }] } } },
    params: UuidIdParams('Number Set'),
    body: Type.Object({ name: Type.Optional(setFields.name), use_case: Type.Optional(setFields.use_case),
      identification_guidance: Type.Optional(setFields.identification_guidance), members: Type.Optional(setFields.members) },
    { additionalProperties: false, minProperties: 1 }),
    response: { status: 200, schema: Type.Object({ data: NumberSetResponse }) },
    errors: ['user_required'],
    handler: async (ctx) => {
      const user = attributedUser(ctx.principal);
      const reply = (s: SetRow) => ({ status: 200, body: { data: setView(s) } });
      return reply(await updateSet(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, user, ctx.body, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/number-health/sets/{id}/members/{phone_id}', scope: 'phone_numbers:write', tag: TAG,
    summary: 'Remove a number from a Number Set',
    description: 'Takes one number out of the set (to keep it but stop selecting it, PATCH its state to RETIRED instead). '
      + 'The number, its calls and its evidence stay; selection no longer considers it. Answers 200 with the set; a number '
      + `that is not a member is not_found. ${needsUser}`,
    examples: { response: { data: { ...SET_EXAMPLE, members: [] } } },
    params: Type.Object({
      id: Type.String({ description: 'The Number Set id (uuid).' }),
      phone_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The member\'s phone number id.' }),
    }),
    response: { status: 200, schema: Type.Object({ data: NumberSetResponse }) },
    errors: ['user_required'],
    handler: async (ctx) => {
      const user = attributedUser(ctx.principal);
      const reply = (s: SetRow) => ({ status: 200, body: { data: setView(s) } });
      return reply(await removeMember(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.params.phone_id, user, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/number-health/sets/{id}', scope: 'phone_numbers:write', tag: TAG, summary: 'Delete a Number Set',
    description: 'Deletes the set and its memberships. The numbers, their calls and evidence stay; spam-test sessions keep '
      + 'the numbers they queued; dialing with this number_set_id is then refused (validation_error). Answers 204.',
    params: UuidIdParams('Number Set'),
    response: { status: 204, description: 'Deleted' },
    handler: async (ctx) => {
      const reply = () => ({ status: 204 });
      await deleteSet(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(reply));
      return reply();
    },
  });
  routes.add({
    method: 'POST', path: '/v1/number-health/sets/{id}/resolve', scope: 'caller_trust:read', tag: TAG, summary: 'Preview caller-ID selection',
    description: 'Which member POST /v1/calls/dial with this number_set_id would use for destination_number: among eligible '
      + 'members (outbound_enabled, state ACTIVE or STANDBY, number ACTIVE), the healthiest evidence tier (CLEAN_OBSERVED, '
      + 'NEEDS_DATA, WATCH, SETUP_INCOMPLETE, FLAGGED), then the lowest priority, then a recipient-sticky tie-breaker (the '
      + 'same destination keeps its number while it stays in the best tier). All eligible members flagged: succeeds with '
      + 'a warning. No eligible member: 409 no_active_number. A preview reserves nothing.',
    examples: { request: { destination_number: '+12125550187' }, response: { data: {
      number_set_id: SET_ID, phone_id: 42, from_number: '+14155550123', evidence_state: 'NEEDS_DATA',
      health_warning: 'Provider risk unknown on VERIZON (unavailable): unknown is not clean.', recommended_action: 'FRESH_CHECK',
      selection_source: 'number_set_sticky_health', eligible_members: 3 } } },
    params: UuidIdParams('Number Set'),
    body: Type.Object({ destination_number: E164('The destination the call would ring (E.164).') }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: ResolutionResponse }) },
    errors: ['no_active_number'],
    handler: async ({ deps, principal, params, body }) => ({
      status: 200,
      body: { data: await resolveNumberSet(deps.db, principal.organizationId, params.id, body.destination_number, deps.clock.now()) },
    }),
  });

  routes.add({
    method: 'POST', path: '/v1/number-health/sessions', scope: 'caller_trust:write', tag: TAG, summary: 'Start a spam-test session',
    description: 'Starts a session ACTIVE for one tester with the queue of numbers its scope names, saved now (ACTIVE numbers; '
      + 'NUMBER_SET queues PRIMARY members, all non-retired members with compare_alternates; other scopes with '
      + 'compare_alternates add the ALTERNATE members of sets where a queued number is PRIMARY). Moves: ACTIVE -> PAUSED, '
      + 'COMPLETED, CANCELLED; PAUSED -> ACTIVE, COMPLETED, CANCELLED. Never requests a paid fresh check. Only '
      + `HUMAN_READINESS evidence counts toward readiness. Answers 201. ${needsUser}`,
    examples: { request: { tester: SESSION_EXAMPLE.tester, mode: 'HUMAN_READINESS', scope: { kind: 'NUMBER_SET', value: SET_ID }, compare_alternates: false },
      response: { data: SESSION_EXAMPLE } },
    body: Type.Object({
      tester: Type.Object({
        alias: Type.String({ minLength: 1, maxLength: 100, description: 'How the tester is named in reports.' }),
        phone_number: E164('The tester\'s phone (E.164): the destination of outbound attempts, the caller of inbound ones.'),
        carrier: lit(TESTER_NETWORKS, 'The tester\'s carrier: ATT, TMOBILE, VERIZON, OTHER or UNKNOWN.'),
        consented: Type.Boolean({ description: 'Whether the tester consented (only consented testers count toward readiness).' }),
      }, { additionalProperties: false, description: 'The tester.' }),
      mode: lit(MODES, 'RAPID_AUDIT (quick handset audit), HUMAN_READINESS (counts toward readiness) or CONNECTIVITY_QA (synthetic; may use AI calls).'),
      scope: Type.Object({
        kind: lit(SCOPE_KINDS, 'ALL, TEAM, NUMBER_SET, AREA_CODE, FLAGGED or NEEDS_DATA.'),
        value: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Required for TEAM (team id), NUMBER_SET (set id) and AREA_CODE (three digits).' })),
      }, { additionalProperties: false, description: 'Which numbers to queue.' }),
      compare_alternates: Type.Optional(Type.Boolean({ default: false, description: 'Queue ALTERNATE members too.' })),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: SessionResponse }) },
    errors: ['user_required'],
    handler: async (ctx) => {
      const user = attributedUser(ctx.principal);
      const reply = (s: SessionRow) => ({ status: 201, body: { data: sessionView(s, []) } });
      return reply(await createSession(ctx.deps.db, ctx.principal.organizationId, user, ctx.body, ctx.deps.clock.now(), ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/number-health/sessions/{id}', scope: 'caller_trust:read', tag: TAG, summary: 'Read a spam-test session',
    description: 'The session with its saved queue (phone_ids) and its attempts with their observations.',
    examples: { response: { data: { ...SESSION_EXAMPLE, attempts: [ATTEMPT_EXAMPLE] } } },
    params: SessionIdParams, response: { status: 200, schema: Type.Object({ data: SessionResponse }) },
    handler: async ({ deps, principal, params }) => {
      const { session, attempts } = await getSession(deps.db, principal.organizationId, params.id);
      return { status: 200, body: { data: sessionView(session, attempts) } };
    },
  });
  routes.add({
    method: 'PATCH', path: '/v1/number-health/sessions/{id}', scope: 'caller_trust:write', tag: TAG, summary: 'Pause, resume, complete or cancel a session',
    description: 'Moves the session: ACTIVE -> PAUSED, COMPLETED or CANCELLED; PAUSED -> ACTIVE, COMPLETED or CANCELLED; '
      + 'COMPLETED and CANCELLED are final (409 state_conflict names the current status). The same status again changes '
      + `nothing. Evidence is never deleted. ${needsUser}`,
    examples: { request: { status: 'PAUSED' }, response: { data: { ...SESSION_EXAMPLE, status: 'PAUSED' } } },
    params: SessionIdParams,
    body: Type.Object({ status: lit(SESSION_STATUSES, 'The new status.') }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: SessionResponse }) },
    errors: ['user_required', 'state_conflict'],
    handler: async (ctx) => {
      attributedUser(ctx.principal);
      const reply = (r: { session: SessionRow; attempts: AttemptRow[] }) => ({ status: 200, body: { data: sessionView(r.session, r.attempts) } });
      return reply(await changeSessionStatus(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.body.status, ctx.deps.clock.now(),
        ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/number-health/sessions/{id}/inbound', scope: 'caller_trust:read', tag: TAG, summary: 'Read inbound progress',
    description: 'The latest call from the session\'s tester to the queued number phone_id made after the session started '
      + '(existing inbound routing; nothing is redirected to a browser). status WAITING until there is one.',
    examples: { response: { data: {
      session_id: SESSION_ID, phone_id: 42, phone_number: '+14155550123', tester_phone_number: '+12125550187', call_id: CALL_ID,
      attempt_id: null, status: 'COMPLETED', answered_at: '2026-11-20T15:05:03.000Z', ended_at: '2026-11-20T15:06:18.000Z',
      duration_seconds: 75, callback_verified: false, human: true } } },
    params: SessionIdParams,
    query: Type.Object({ phone_id: Type.Integer({ minimum: 1, description: 'A number of the session\'s queue.' }) }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: InboundResponse }) },
    handler: async ({ deps, principal, params, query }) =>
      ({ status: 200, body: { data: await inboundProgress(deps.db, principal.organizationId, params.id, query.phone_id) } }),
  });
  routes.add({
    method: 'POST', path: '/v1/number-health/sessions/{id}/attempts', scope: 'caller_trust:write', tag: TAG, summary: 'Attach a call to a session',
    description: 'Attaches an existing call (it never dials) as an attempt on a queued number. Checked: the call is the '
      + 'organization\'s (404), phone_id is in the queue, the call was made from that number to the tester (outbound) or '
      + 'from the tester to that number (inbound), after the session started, not already attached, and not an AI call in '
      + `a human mode (RAPID_AUDIT, HUMAN_READINESS); the session must be ACTIVE (409 state_conflict). Answers 201. ${needsUser}`,
    examples: { request: { phone_id: 42, call_id: CALL_ID }, response: { data: ATTEMPT_EXAMPLE } },
    params: SessionIdParams,
    body: Type.Object({
      phone_id: Type.Integer({ minimum: 1, description: 'The queued number the call tested.' }),
      call_id: Type.String({ minLength: 1, maxLength: 64, description: 'An existing call of the organization.' }),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: AttemptResponse }) },
    errors: ['user_required', 'state_conflict'],
    handler: async (ctx) => {
      const user = attributedUser(ctx.principal);
      const reply = (a: AttemptRow) => ({ status: 201, body: { data: attemptView(a) } });
      return reply(await createAttempt(ctx.deps.db, ctx.principal.organizationId, user, ctx.params.id, ctx.body, ctx.deps.clock.now(), ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'POST', path: '/v1/number-health/attempts/{id}/observation', scope: 'caller_trust:write', tag: TAG, summary: 'Record what the handset showed',
    description: 'Records the observation of an attempt once its call reached a terminal carrier state (before that: 400 '
      + 'call_not_terminal with Retry-After). Posting again corrects it; every posting keeps a before/after snapshot '
      + '(audit). callback_verified is an operator\'s attestation, recorded with who and when; omitted, it keeps its value. '
      + `The number's readiness is recounted. Not allowed once the session is CANCELLED (409). ${needsUser}`,
    examples: {
      request: { outcome: 'CLEAN', observed_label: 'Acme Dental', handset: { manufacturer: 'Apple', model: 'iPhone 15', os: 'iOS 18.1' }, callback_verified: true },
      response: { data: { attempt: { ...ATTEMPT_EXAMPLE, observation: { outcome: 'CLEAN', observed_label: 'Acme Dental',
        handset: { manufacturer: 'Apple', model: 'iPhone 15', os: 'iOS 18.1' }, recorded_at: '2026-11-20T15:07:00.000Z', recorded_by_user_id: USER_ID },
      callback_verified: true, callback_attestation: { attested_by_user_id: USER_ID, attested_at: '2026-11-20T15:07:00.000Z' } },
      audit: [{ recorded_by_user_id: USER_ID, before: null, after: { outcome: 'CLEAN', observed_label: 'Acme Dental',
        handset: { manufacturer: 'Apple', model: 'iPhone 15', os: 'iOS 18.1' }, callback_verified: true }, recorded_at: '2026-11-20T15:07:00.000Z' }] } },
    },
    params: UuidIdParams('attempt'),
    body: Type.Object({
      outcome: lit(OUTCOMES, 'CLEAN, NUMBER_ONLY, LOCATION (non-spam; only CLEAN confirms the name), WRONG_NAME, SPAM, SCAM, BLOCKED, NO_RING (negative) or UNKNOWN.'),
      observed_label: Type.String({ maxLength: 200, description: 'The exact display text (empty when nothing was shown).' }),
      handset: Handset,
      callback_verified: Type.Optional(Type.Boolean({ description: 'Operator attestation that a callback reached the business; audited.' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: ObservationResultResponse }) },
    errors: ['user_required', 'state_conflict', 'call_not_terminal'],
    handler: async (ctx) => {
      const user = attributedUser(ctx.principal);
      const reply = (r: ObservationResult) => ({ status: 200, body: { data: observationResultView(r) } });
      return reply(await recordObservation(ctx.deps.db, ctx.principal.organizationId, user, ctx.params.id, ctx.body, ctx.deps.clock.now(), ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'POST', path: '/v1/sandbox/calls/inbound', scope: 'calls:write', tag: 'Sandbox', summary: 'Simulate an inbound call',
    description: 'Sandbox carrier only (403 forbidden otherwise): a call from from_number (for example a tester\'s '
      + 'phone) to to_number (an ACTIVE number of the organization), type and direction inbound. Without ring it is recorded '
      + 'starting now and already ended: answered after 3 s and talking duration_seconds, or no_answer, busy, voicemail '
      + '(duration 0); it emits no webhook events. Spam-test attempts and inbound progress use it like any call. '
      + 'With ring: true (no duration_seconds or outcome) it is a live call that rings every browser of the organization '
      + 'listening for to_number (the console\'s Phone page, the SDK\'s IncomingCalls), as a SIP trunk\'s call does: '
      + 'admitted like one (not_found when to_number is no ACTIVE number of yours, 409 state_conflict when its inbound '
      + 'setting is reject, channel_limit_exceeded, spend_cap_reached; nothing is written then), status RINGING with '
      + 'its new_call event. Unanswered within SANDBOX_INBOUND_RING_SECONDS (real seconds, default 30) it ends NO_ANSWER '
      + '(call_no_answer); the browser that accepts gets the sandbox far end\'s audio (a tone, then an echo) and the caller '
      + 'hangs up talk_seconds later (COMPLETED) unless the browser hangs up first. Answers 201 with the call record.',
    examples: { request: { from_number: '+12125550187', to_number: '+14155550123', duration_seconds: 75, outcome: 'answered' },
      response: { data: INBOUND_CALL_EXAMPLE } },
    body: Type.Object({
      from_number: E164('The caller (E.164), e.g. a tester\'s phone.'),
      to_number: E164('An ACTIVE number of your organization (E.164).'),
      duration_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 10800, description: 'Talk time; 0 unless answered. Required without ring; not with ring: true.' })),
      outcome: Type.Optional(lit(INBOUND_OUTCOMES, 'answered (COMPLETED), no_answer, busy or voicemail. Required without ring; not with ring: true.')),
      ring: Type.Optional(Type.Boolean({ default: false, description: 'true: a live call that rings the organization\'s listening browsers '
        + '(answers with status RINGING) instead of a finished record. Default false.', examples: [true] })),
      talk_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: SANDBOX_INBOUND_TALK_MAX, description: 'With ring: true only: sandbox '
        + `seconds the caller talks after a browser accepts before hanging up (scaled by SANDBOX_TIME_SCALE). Default ${SANDBOX_INBOUND_TALK_SECONDS}.`,
      examples: [30] })),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: Call }) },
    errors: ['forbidden', 'not_found', 'state_conflict', 'channel_limit_exceeded', 'spend_cap_reached'],
    handler: async ({ deps, principal, body, baseUrl }) => {
      if (deps.config.carrier !== 'sandbox') throw new DomainError('forbidden', 'Inbound calls are simulated with the sandbox carrier only.');
      const call = await sandboxInboundCall(deps.calls, principal, body, deps.clock.now());
      return { status: 201, body: { data: callView(call, { baseUrl, recordings: false, content: OPEN_SCOPE }) } };
    },
  });
};
