// The one error type of the platform. Every code the reference names is listed here once, with its HTTP status
// and (for call-related codes) its category; the gateway maps an ApiError to the error envelope in one place.

export type ErrorCategory =
  | 'invalid_request' | 'compliance_block' | 'account_limit' | 'unreachable' | 'voicemail' | 'provider_error';

interface CodeSpec { status: number; category?: ErrorCategory; retryable?: boolean }

export const ERROR_CODES = {
  // General errors (every endpoint, no category)
  validation_error: { status: 400 },
  unauthorized: { status: 401 },
  forbidden: { status: 403 },
  scope_missing: { status: 403 },
  not_found: { status: 404 },
  method_not_allowed: { status: 405 },
  idempotency_conflict: { status: 409 },
  rate_limited: { status: 429, retryable: true },
  internal_error: { status: 500, retryable: true },
  service_unavailable: { status: 503, retryable: true },
  // Synchronous call errors
  destination_missing: { status: 400, category: 'invalid_request' },
  destination_invalid: { status: 400, category: 'invalid_request' },
  no_active_number: { status: 409, category: 'invalid_request' },
  call_id_not_verified: { status: 422, category: 'invalid_request' },
  destination_blocked: { status: 403, category: 'compliance_block' },
  dnc_suppressed: { status: 403, category: 'compliance_block' },
  recipient_opted_out: { status: 403, category: 'compliance_block' },
  no_consent: { status: 403, category: 'compliance_block' },
  outside_call_window: { status: 403, category: 'compliance_block', retryable: true },
  day_not_allowed: { status: 403, category: 'compliance_block', retryable: true },
  frequency_exceeded: { status: 429, category: 'compliance_block', retryable: true },
  voice_usage_exhausted: { status: 402, category: 'account_limit' },
  no_active_subscription: { status: 402, category: 'account_limit' },
  spend_cap_reached: { status: 402, category: 'account_limit' },
  no_number_available: { status: 429, category: 'account_limit', retryable: true },
  channel_limit_exceeded: { status: 409, category: 'account_limit', retryable: true },
  room_creation_failed: { status: 502, category: 'provider_error', retryable: true },
  agent_dispatch_failed: { status: 502, category: 'provider_error', retryable: true },
  sip_gateway_failed: { status: 502, category: 'provider_error', retryable: true },
  provider_api_error: { status: 502, category: 'provider_error', retryable: true },
  // Other errors
  texting_not_ready: { status: 403 },
  content_policy_forbidden: { status: 403 },
  // Phone-number lifecycle: the number (or every number of the area code) is held by an organization.
  number_unavailable: { status: 409 },
  // Buying numbers with CARRIER=sip: the numbers are the trunk provider's, not the platform's to sell.
  numbers_from_trunk: { status: 409 },
  // Webhook subscriptions: the same URL already subscribed to the event type (fields.conflicts_with names it), and
  // the per-organization cap (a limit like the channel limit: 409, not a 429).
  subscription_exists: { status: 409 },
  subscription_limit_exceeded: { status: 409 },
  // Optimize: an illegal test state move (fields.status is the current status), a domain registered twice, a
  // conversion for a visitor the test never assigned.
  test_state_conflict: { status: 409 },
  property_exists: { status: 409 },
  visitor_not_assigned: { status: 422 },
  // Caller IDs (shared/caller-ids): adding, and confirming the code of a verification call.
  caller_id_exists: { status: 409 },
  // A number another organization holds on the platform: refused as a caller ID when added, verified and dialed.
  caller_id_held_elsewhere: { status: 409, category: 'invalid_request' },
  caller_id_limit_exceeded: { status: 409 },
  caller_id_already_verified: { status: 409 },
  verification_not_started: { status: 409 },
  verification_code_incorrect: { status: 422 },
  verification_code_expired: { status: 410 },
  verification_locked: { status: 423 },
  // CNAM: the number is released (409 naming its status).
  cnam_number_released: { status: 409 },
  // Contacts: the number already belongs to a live contact; a move the record's current status does not allow.
  contact_exists: { status: 409 },
  invalid_state: { status: 409 },
  // Caller trust: a move the registration's or the DIR's current status does not allow (the message names it).
  enterprise_status_conflict: { status: 409 },
  enterprise_not_approved: { status: 409 },
  brand_status_conflict: { status: 409 },
  // Caller-trust reputation remediation (shared/caller-trust/reputation/remediation.ts).
  own_brand_not_approved: { status: 409 },
  number_not_flagged: { status: 409 },
  remediation_in_progress: { status: 409 },
  // Number Health: writes attributed to a user (Authentication rule 9), status moves, observations on live calls.
  user_required: { status: 403 },
  state_conflict: { status: 409 },
  call_not_terminal: { status: 400 },
  // SMS: a texting registration is submitted while one is pending or approved (fields.status names it).
  texting_registration_conflict: { status: 409 },
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
  rate_limited: 'Too many requests for this key in the current one-minute window; retry after Retry-After seconds.',
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
  subscription_exists: 'This webhook_url is already subscribed to this event_type (fields.conflicts_with names the '
    + 'existing subscription).',
  subscription_limit_exceeded: 'The organization has reached its maximum number of webhook subscriptions; delete one first.',
  test_state_conflict: 'The Optimize test\'s current status (fields.status) does not allow this change; see the allowed moves.',
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
  invalid_state: 'The record\'s current status does not allow this change (fields.status names the current status).',
  enterprise_status_conflict: 'The enterprise registration\'s current status (named in the message) does not allow this '
    + 'move, e.g. editing a registration that is no longer a DRAFT or re-signing one that was not REJECTED.',
  enterprise_not_approved: 'This needs an APPROVED enterprise registration; the message names the primary registration\'s '
    + 'current status (or that there is none).',
  brand_status_conflict: 'The Display Identity Record\'s current status (named in the message) does not allow this move, '
    + 'e.g. changing or submitting it while it is under review.',
  own_brand_not_approved: 'Own-brand remediation needs an APPROVED enterprise registration (account footprint '
    + 'own_brand_enterprise); use kind umbrella until then.',
  number_not_flagged: 'The number is not flagged (MEDIUM or HIGH) on any carrier in its cached evidence; only flagged '
    + 'numbers can be remediated.',
  remediation_in_progress: 'The number already has a remediation case that is open or in review (fields.phone_number '
    + 'names it and its status).',
  user_required: 'The operation is attributed to a user and the credential has no associated user (an organization-only API '
    + 'key); use a key created for a user.',
  state_conflict: 'The resource\'s current status does not allow this change (the message names the status).',
  call_not_terminal: 'The call has not reached a terminal carrier state yet; retry after Retry-After seconds (resolution_hint).',
  texting_registration_conflict: 'The texting registration is pending or approved (fields.status); only a rejected one '
    + 'can be submitted again.',
};

export interface ApiErrorOptions {
  status?: number;
  category?: ErrorCategory;
  fields?: Record<string, string>;
  resolutionHint?: string;
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly category?: ErrorCategory;
  readonly fields?: Record<string, string>;
  readonly resolutionHint?: string;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, opts: ApiErrorOptions = {}) {
    super(message);
    const spec: CodeSpec = ERROR_CODES[code];
    this.code = code;
    this.status = opts.status ?? spec.status;
    this.category = opts.category ?? spec.category;
    this.fields = opts.fields;
    this.resolutionHint = opts.resolutionHint;
    this.headers = opts.headers;
  }

  toBody() {
    const error: Record<string, unknown> = { code: this.code, message: this.message };
    if (this.category) error.category = this.category;
    if (this.resolutionHint) error.resolution_hint = this.resolutionHint;
    if (this.fields && Object.keys(this.fields).length) error.fields = this.fields;
    return { error };
  }
}

export const validationError = (fields: Record<string, string>, message = 'The request is invalid; see fields.') =>
  new ApiError('validation_error', message, { fields });

export const notFound = (what: string) => new ApiError('not_found', `${what} was not found.`);
