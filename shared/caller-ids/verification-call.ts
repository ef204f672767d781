// The verification call: dials the external number and speaks the code. A provider behind an interface; the
// sandbox carrier's simulated call "speaks" into the sandbox inbox (shared/sandbox/inbox.ts) in the same
// transaction that stores the code, so the code is readable the moment POST .../verify answers.
import type { Config } from '../config.ts';
import type { Db, Tx } from '../db.ts';
import { DomainError } from '../errors.ts';
import { deliverToInbox } from '../sandbox/inbox.ts';

export interface VerificationCallRequest {
  organizationId: string;
  callerIdId: string;
  phoneNumber: string;
  code: string;
}

export interface VerificationCaller {
  /** The carrier name recorded on caller_id_verification_calls. */
  readonly name: string;
  /** Places the call; `q` is the transaction that stores the code (a real carrier would dial after it commits). */
  place(q: Db | Tx, req: VerificationCallRequest): Promise<void>;
}

/** What the call says: the digits one by one, twice. */
export function verificationSpeech(code: string): string {
  const digits = code.split('').join(', ');
  return `This is the Openline caller ID verification service. Your verification code is ${digits}. Again, your code is ${digits}. Goodbye.`;
}

export const sandboxVerificationCaller: VerificationCaller = {
  name: 'sandbox',
  async place(q, req) {
    await deliverToInbox(q, {
      organizationId: req.organizationId, phoneNumber: req.phoneNumber, channel: 'voice', kind: 'caller_id_verification_call',
      text: verificationSpeech(req.code),
    });
  },
};

/** The configured carrier's verification caller. The production (LiveKit) carrier has no text-to-speech outbound
 *  call yet (docs/status.md): verification answers 503 there rather than pretending a call went out. */
export function verificationCaller(config: Pick<Config, 'carrier'>): VerificationCaller {
  if (config.carrier === 'sandbox') return sandboxVerificationCaller;
  throw new DomainError('service_unavailable', `Caller-ID verification calls are not available on the ${config.carrier} carrier yet.`,
    { resolutionHint: 'Use the sandbox carrier, or use numbers of your organization as caller IDs.' });
}
