import type { ControlErrorCode } from '../shared/media/protocol.ts';

const STATUS: Record<ControlErrorCode, number> = {
  validation_error: 400, unauthorized: 401, not_found: 404, method_not_allowed: 405, conflict: 409,
  codec_mismatch: 409, payload_too_large: 413, unavailable: 503, internal_error: 500,
};

/** An error the control API answers with its own status and code (anything else is a 500). */
export class ControlError extends Error {
  readonly status: number;
  constructor(readonly code: ControlErrorCode, message: string, readonly fields?: Record<string, string>) {
    super(message);
    this.status = STATUS[code];
  }
}
