// The HTTP edge of the domain's errors: the one table of each code's HTTP status, and the error envelope a
// DomainError becomes on the wire. The domain (shared/) throws DomainError without a status; the gateway's error
// envelope, its OpenAPI document and the media control API take statuses from here. Only this folder and
// shared/errors.ts know that an error has a status (test/gateway/error-table.test.ts guards it).
import { DomainError, type DomainErrorOptions, type ErrorCategory, type ErrorCode } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { ControlErrorCode } from '../media/protocol.ts';
import { outageReason, storeUnavailable, unreachableStore } from '../unavailable.ts';
import { errorBody, type ErrorEnvelope } from './envelope.ts';

/** Every code's status; typed by ErrorCode, so a new code without a status does not compile. */
export const ERROR_STATUS: Record<ErrorCode, number> = {
  // General errors (every endpoint)
  validation_error: 400,
  unauthorized: 401,
  forbidden: 403,
  scope_missing: 403,
  not_found: 404,
  method_not_allowed: 405,
  idempotency_conflict: 409,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
  // Synchronous call errors
  destination_missing: 400,
  destination_invalid: 400,
  no_active_number: 409,
  call_id_not_verified: 422,
  destination_blocked: 403,
  dnc_suppressed: 403,
  recipient_opted_out: 403,
  no_consent: 403,
  outside_call_window: 403,
  day_not_allowed: 403,
  frequency_exceeded: 429,
  voice_usage_exhausted: 402,
  no_active_subscription: 402,
  spend_cap_reached: 402,
  no_number_available: 429,
  channel_limit_exceeded: 409,
  room_creation_failed: 502,
  agent_dispatch_failed: 502,
  sip_gateway_failed: 502,
  provider_api_error: 502,
  // Other errors
  texting_not_ready: 403,
  content_policy_forbidden: 403,
  number_unavailable: 409,
  numbers_from_trunk: 409,
  numbers_not_importable: 409,
  subscription_exists: 409,
  // A cap like the channel limit: 409, not a 429.
  subscription_limit_exceeded: 409,
  property_exists: 409,
  visitor_not_assigned: 422,
  caller_id_exists: 409,
  caller_id_held_elsewhere: 409,
  caller_id_limit_exceeded: 409,
  caller_id_already_verified: 409,
  verification_not_started: 409,
  verification_code_incorrect: 422,
  verification_code_expired: 410,
  verification_locked: 423,
  cnam_number_released: 409,
  contact_exists: 409,
  enterprise_not_approved: 409,
  own_brand_not_approved: 409,
  number_not_flagged: 409,
  remediation_in_progress: 409,
  user_required: 403,
  state_conflict: 409,
  call_not_terminal: 400,
  member_exists: 409,
  last_owner: 409,
  slot_unavailable: 409,
};

export const statusOf = (code: ErrorCode): number => ERROR_STATUS[code];

/** The media control API's own codes (shared/media/protocol.ts) and their statuses. */
export const CONTROL_ERROR_STATUS: Record<ControlErrorCode, number> = {
  validation_error: 400, unauthorized: 401, not_found: 404, method_not_allowed: 405, conflict: 409,
  codec_mismatch: 409, payload_too_large: 413, unavailable: 503, internal_error: 500,
};

export interface ApiErrorOptions extends DomainErrorOptions {
  /** Replaces the code's status: the 416 of a byte range past the end is a validation_error. */
  status?: number;
  headers?: Record<string, string>;
}

/** An error raised at the HTTP edge itself when its answer needs more than the code's status (a status of its own,
 *  or headers such as Content-Range). Domain modules throw DomainError. */
export class ApiError extends DomainError {
  readonly status?: number;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, opts: ApiErrorOptions = {}) {
    super(code, message, opts);
    this.status = opts.status;
    this.headers = opts.headers;
  }
}

export interface HttpErrorAnswer { status: number; body: ErrorEnvelope; headers?: Record<string, string> }

/** How a DomainError is answered over HTTP: the table's status, the envelope, Retry-After when it says when. */
export function httpError(e: DomainError): HttpErrorAnswer {
  const own = e instanceof ApiError ? e : undefined;
  let headers = own?.headers;
  if (e.retryAfterSeconds !== undefined) headers = { 'Retry-After': String(e.retryAfterSeconds), ...headers };
  return { status: own?.status ?? statusOf(e.code), body: errorBody(e), headers };
}

/** Anything a request threw, as its answer: a domain error through the table; an unreachable store as 503 with
 *  Retry-After (an outage, not a bug: one warning line, no stack); anything else as a 500 quoting the request id. */
export function errorReply(err: unknown, log: Logger, requestId: string): HttpErrorAnswer {
  if (err instanceof DomainError) return httpError(err);
  const store = unreachableStore(err);
  if (store) {
    log.warn({ req_id: requestId, store, reason: outageReason(err) }, 'store unreachable');
    return httpError(storeUnavailable(store));
  }
  log.error({ err, req_id: requestId }, 'unhandled error');
  return httpError(new DomainError('internal_error', `An unexpected error occurred. Quote request id ${requestId} when reporting it.`));
}
