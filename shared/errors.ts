// The one error type of the domain. Every code the reference names is listed here once, with its category (call
// codes) and whether the same request may succeed later. The domain knows no HTTP: a code's status lives in one
// table at the HTTP edge (shared/http/error-status.ts), which turns a DomainError into the error envelope.

export type ErrorCategory =
  | 'invalid_request' | 'compliance_block' | 'account_limit' | 'unreachable' | 'voicemail' | 'provider_error';

interface CodeSpec { category?: ErrorCategory; retryable?: boolean }

export const ERROR_CODES = {
  // General errors (every endpoint, no category)
  validation_error: {},
  unauthorized: {},
  forbidden: {},
  scope_missing: {},
  not_found: {},
  method_not_allowed: {},
  idempotency_conflict: {},
  rate_limited: { retryable: true },
  internal_error: { retryable: true },
  service_unavailable: { retryable: true },
  // Synchronous call errors
  destination_missing: { category: 'invalid_request' },
  destination_invalid: { category: 'invalid_request' },
  no_active_number: { category: 'invalid_request' },
  call_id_not_verified: { category: 'invalid_request' },
  destination_blocked: { category: 'compliance_block' },
  dnc_suppressed: { category: 'compliance_block' },
  recipient_opted_out: { category: 'compliance_block' },
  no_consent: { category: 'compliance_block' },
  outside_call_window: { category: 'compliance_block', retryable: true },
  day_not_allowed: { category: 'compliance_block', retryable: true },
  frequency_exceeded: { category: 'compliance_block', retryable: true },
  voice_usage_exhausted: { category: 'account_limit' },
  no_active_subscription: { category: 'account_limit' },
  spend_cap_reached: { category: 'account_limit' },
  no_number_available: { category: 'account_limit', retryable: true },
  channel_limit_exceeded: { category: 'account_limit', retryable: true },
  room_creation_failed: { category: 'provider_error', retryable: true },
  agent_dispatch_failed: { category: 'provider_error', retryable: true },
  sip_gateway_failed: { category: 'provider_error', retryable: true },
  provider_api_error: { category: 'provider_error', retryable: true },
  // Other errors
  texting_not_ready: {},
  content_policy_forbidden: {},
  // Phone-number lifecycle: the number (or every number of the area code) is held by an organization.
  number_unavailable: {},
  // Buying numbers with CARRIER=sip: the numbers are the trunk provider's, not the platform's to sell.
  numbers_from_trunk: {},
  // Importing numbers (POST /v1/phone-numbers/import) with a carrier other than the SIP trunk.
  numbers_not_importable: {},
  // Webhook subscriptions: the same URL already subscribed to the event type (fields.conflicts_with names it), and
  // the per-organization cap (a limit like the channel limit: 409, not a 429).
  subscription_exists: {},
  subscription_limit_exceeded: {},
  // Optimize: a domain registered twice, a conversion for a visitor the test never assigned.
  property_exists: {},
  visitor_not_assigned: {},
  // Caller IDs (shared/caller-ids): adding, and confirming the code of a verification call.
  caller_id_exists: {},
  // A number another organization holds on the platform: refused as a caller ID when added, verified and dialed.
  caller_id_held_elsewhere: { category: 'invalid_request' },
  caller_id_limit_exceeded: {},
  caller_id_already_verified: {},
  verification_not_started: {},
  verification_code_incorrect: {},
  verification_code_expired: {},
  verification_locked: {},
  // CNAM: the number is released (409 naming its status).
  cnam_number_released: {},
  // Contacts: the number already belongs to a live contact.
  contact_exists: {},
  // Caller trust: an operation that needs an APPROVED enterprise registration (a precondition, not a state move).
  enterprise_not_approved: {},
  // Caller-trust reputation remediation (shared/caller-trust/reputation/remediation.ts).
  own_brand_not_approved: {},
  number_not_flagged: {},
  remediation_in_progress: {},
  // Number Health: writes attributed to a user (Authentication rule 9), observations on live calls.
  user_required: {},
  call_not_terminal: {},
  // Every illegal state change, whatever the resource (stateConflict below): fields.entity names the resource,
  // fields.status its current status.
  state_conflict: {},
  // Members (shared/users/members.ts): the email already belongs to an active user; the last owner would go.
  member_exists: {},
  last_owner: {},
  // Appointments (shared/appointments): the time overlaps a booked appointment or its buffer.
  slot_unavailable: {},
} satisfies Record<string, CodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** What each code means, in one place: the OpenAPI document lists these per operation (gateway/http/openapi.ts). */
export const ERROR_MEANINGS: Record<ErrorCode, string> = {
  validation_error: 'The body, query or path parameters are invalid; `fields` maps each offending field to the reason. '
    + 'Also an expired or foreign cursor (fields.cursor) and a byte range past the end of a file (416).',
  unauthorized: 'The Authorization header is missing, or the API key or client token is unknown, revoked or expired. '
    + 'Carries a WWW-Authenticate Bearer challenge.',
  forbidden: 'The credential may not do this: a number outside the credential\'s from/to bounds, a number not owned by '
    + 'the organization, a demo key outside its destination allowlist, or a client token trying to mint tokens.',
  scope_missing: 'The credential lacks the scope this operation requires (named in WWW-Authenticate and in the message).',
  not_found: 'No resource with this id exists in the credential\'s organization.',
  method_not_allowed: 'The path exists but not with this method (the Allow header lists the methods it has).',
  idempotency_conflict: 'The Idempotency-Key was already used with a different request body; fields.conflicts_with holds '
    + 'the original request id.',
  rate_limited: 'Too many requests for this key in the current one-minute window; retry after Retry-After seconds. On '
    + 'POST /v1/session: too many failed sign-ins for this email or from this address (the lockout); retry after Retry-After seconds.',
  internal_error: 'An unexpected server error; safe to retry with the same Idempotency-Key.',
  service_unavailable: 'Temporarily unavailable: the database or Redis cannot be reached (an outage; the message names '
    + 'which), or the gateway is at a capacity limit (for example recordings already streaming). Not a bug: retry after '
    + 'Retry-After seconds. Without Retry-After: a feature this platform does not offer as configured (the message says '
    + 'which, e.g. an LOA before the operator set PLATFORM_LEGAL_NAME, or an AI call with CARRIER=sip).',
  destination_missing: 'No destination (to_number) was given.',
  destination_invalid: 'The destination is not a valid, dialable E.164 number.',
  no_active_number: 'The caller ID (from_number) is not an active number of the organization (for example still '
    + 'PROVISIONING, or released).',
  call_id_not_verified: 'The caller ID is not verified for the account.',
  destination_blocked: 'The destination is an emergency or special-service number, which is never dialed.',
  dnc_suppressed: 'The destination is on a Do-Not-Call list.',
  recipient_opted_out: 'The contact opted out of calls (on POST /v1/sms/send: of SMS from your organization, by '
    + 'replying STOP; fields.to_number).',
  no_consent: 'No calling consent is on file for the contact.',
  outside_call_window: 'Outside the permitted calling hours of the destination; retry later.',
  day_not_allowed: 'Calls are not permitted today for the destination; retry another day.',
  frequency_exceeded: 'The contact has been called the maximum number of times for now.',
  voice_usage_exhausted: 'The included voice minutes are used up.',
  no_active_subscription: 'The organization has no active subscription: calls, SMS and every other paid operation are '
    + 'refused until an administrator reactivates it.',
  spend_cap_reached: 'Placing the call would exceed the organization\'s daily spend cap (each live call reserves its '
    + 'worst-case cost).',
  no_number_available: 'Every number that could be used is busy; retry shortly.',
  channel_limit_exceeded: 'The organization\'s concurrent channel limit is reached (a bridge call holds two channels, '
    + 'others one). Calls do not queue; retry when a call ends.',
  room_creation_failed: 'The call session could not be started at the carrier; retry.',
  agent_dispatch_failed: 'No voice agent could be connected to the call; retry.',
  sip_gateway_failed: 'The phone network could not be reached through the SIP gateway; retry.',
  provider_api_error: 'The telephony provider answered with an error; retry.',
  texting_not_ready: 'A2P texting registration is missing, pending or rejected (fields.reason, fields.registration_status).',
  content_policy_forbidden: 'The organization\'s content policy (HIPAA) pins call content to a compliance boundary: '
    + 'transcripts, recordings and derived analysis are never returned.',
  number_unavailable: 'The number (or every number of the area code) is already held by an organization; pick another '
    + 'from GET /v1/phone-numbers/available.',
  numbers_from_trunk: 'This platform places calls through a SIP trunk (CARRIER=sip): its numbers are bought from the '
    + 'trunk provider and brought onto the organization by an operator, not bought here.',
  numbers_not_importable: 'Numbers are imported only with the SIP trunk carrier (CARRIER=sip); with this carrier buy them '
    + 'with POST /v1/phone-numbers.',
  subscription_exists: 'This webhook_url is already subscribed to this event_type (fields.conflicts_with names the '
    + 'existing subscription).',
  subscription_limit_exceeded: 'The organization has reached its maximum number of webhook subscriptions; delete one first.',
  property_exists: 'This domain is already registered as a property of the organization (fields.conflicts_with names it).',
  visitor_not_assigned: 'The visitor was never assigned a variant of this test (the tag records an assignment when it shows '
    + 'the test to an enrolled visitor); nothing was recorded.',
  caller_id_exists: 'The number is already a caller ID of the organization (fields.conflicts_with names it) or one of its '
    + 'own numbers.',
  caller_id_held_elsewhere: 'The number is held on this platform by another account, so it cannot be a caller ID of this '
    + 'organization (refused when added, when a verification call is asked for, and when a call is placed from it).',
  caller_id_limit_exceeded: 'The organization holds the most caller IDs it may (20); remove one first.',
  caller_id_already_verified: 'The caller ID is already verified: there is nothing to verify or confirm.',
  verification_not_started: 'No verification call has been placed for this caller ID yet; POST /v1/caller-ids/{id}/verify.',
  verification_code_incorrect: 'The code is not the one the verification call spoke; the message says how many attempts are left.',
  verification_code_expired: 'The code expired (codes are valid 10 minutes); place a new verification call.',
  verification_locked: 'Too many wrong codes (5): the code is locked; place a new verification call.',
  cnam_number_released: 'The number is released: its caller name can no longer be changed.',
  contact_exists: 'Another live contact of the organization has this phone_number (fields.conflicts_with names it).',
  enterprise_not_approved: 'This needs an APPROVED enterprise registration; the message names the primary registration\'s '
    + 'current status (or that there is none).',
  own_brand_not_approved: 'Own-brand remediation needs an APPROVED enterprise registration (account footprint '
    + 'own_brand_enterprise); use kind umbrella until then.',
  number_not_flagged: 'The number is not flagged (MEDIUM or HIGH) on any carrier in its cached evidence; only flagged '
    + 'numbers can be remediated.',
  remediation_in_progress: 'The number already has a remediation case that is open or in review (fields.phone_number '
    + 'names it and its status).',
  user_required: 'The operation is attributed to a user and the credential has no associated user (an organization-only API '
    + 'key); use a key created for a user.',
  call_not_terminal: 'The call has not reached a terminal carrier state yet; retry after Retry-After seconds (resolution_hint).',
  member_exists: 'The email already belongs to an active user (a person has one account across the platform); remove '
    + 'that user first, or invite another address.',
  last_owner: 'The organization must keep at least one owner: make another member an owner before removing or demoting this one.',
  slot_unavailable: 'The appointment time overlaps a booked appointment or the buffer after one (fields.start_at); pick another '
    + 'free slot from GET /v1/appointments/availability.',
  state_conflict: 'The resource\'s current status does not allow this change. fields.entity names the resource '
    + '(optimize_test, contact_consent, contact_opt_out, enterprise_registration, brand, texting_registration, '
    + 'number_health_session, appointment) and fields.status its current status; the message says what is allowed. '
    + 'A sandbox inbound call rung to a number that rejects inbound calls: fields.entity phone_number, fields.inbound reject.',
};

export interface DomainErrorOptions {
  fields?: Record<string, string>;
  /** Replaces the code's own category (the per-organization call rate is an account_limit). */
  category?: ErrorCategory;
  resolutionHint?: string;
  /** Seconds after which the same request may succeed (the HTTP edge says it as Retry-After). */
  retryAfterSeconds?: number;
}

/** A refusal the domain decides: a code from ERROR_CODES, a message for people, and `fields` naming what failed. */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly category?: ErrorCategory;
  readonly fields?: Record<string, string>;
  readonly resolutionHint?: string;
  readonly retryAfterSeconds?: number;

  constructor(code: ErrorCode, message: string, opts: DomainErrorOptions = {}) {
    super(message);
    this.code = code;
    this.category = opts.category ?? (ERROR_CODES[code] as CodeSpec).category;
    this.fields = opts.fields;
    this.resolutionHint = opts.resolutionHint;
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }
}

export const validationError = (fields: Record<string, string>, message = 'The request is invalid; see fields.') =>
  new DomainError('validation_error', message, { fields });

export const notFound = (what: string) => new DomainError('not_found', `${what} was not found.`);

/** The resources whose illegal state changes answer state_conflict (fields.entity). */
export type StateEntity = 'optimize_test' | 'contact_consent' | 'contact_opt_out' | 'enterprise_registration' | 'brand'
  | 'texting_registration' | 'number_health_session' | 'appointment' | 'sub_entity' | 'task' | 'webhook_subscription';

/** An illegal state change: the one code for every resource, with the resource and its current status in fields. */
export const stateConflict = (entity: StateEntity, status: string, message: string,
  opts: Omit<DomainErrorOptions, 'fields'> = {}) => new DomainError('state_conflict', message, { ...opts, fields: { entity, status } });
