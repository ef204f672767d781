import type { ControlErrorCode } from '../shared/media/protocol.ts';
import { CONTROL_ERROR_STATUS } from '../shared/http/error-status.ts';

/** An error the control API answers with its own status and code (anything else is a 500), in the shared error
 *  envelope (shared/http/envelope.ts). */
export class ControlError extends Error {
  readonly status: number;
  constructor(readonly code: ControlErrorCode, message: string, readonly fields?: Record<string, string>,
    readonly headers?: Record<string, string>) {
    super(message);
    this.status = CONTROL_ERROR_STATUS[code];
  }
}
