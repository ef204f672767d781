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
  // Webhook subscriptions: the same URL already subscribed to the event type (fields.conflicts_with names it), and
  // the per-organization cap (a limit like the channel limit: 409, not a 429).
  subscription_exists: { status: 409 },
  subscription_limit_exceeded: { status: 409 },
} satisfies Record<string, CodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

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
