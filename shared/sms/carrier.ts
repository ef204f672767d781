// The SMS carrier interface: hand a message over (the carrier accepts it: sent, or refuses it: failed), and
// later report its delivery receipt (delivered or undelivered) as a job on SMS_RECEIPTS_QUEUE, which the workers'
// sms-receipts processor applies. submit() must be idempotent per message id: the workers repeat it after a crash.
// shared/sms/configured.ts picks the carrier.
import type { Queue } from 'bullmq';
import type { QueueRegistry } from '../queues/registry.ts';

export const SMS_RECEIPTS_QUEUE = 'sms-receipts';

export interface SmsSubmit { messageId: string; from: string; to: string; body: string; segments: number }

export type SmsSubmitResult =
  | { accepted: true; providerId: string }
  | { accepted: false; providerId: string | null; error: string };

export interface SmsReceipt {
  messageId: string;
  providerId: string;
  status: 'delivered' | 'undelivered';
  error: string | null;
  /** When the carrier saw it (ISO 8601). */
  at: string;
}

export interface SmsCarrier {
  readonly name: string;
  submit(m: SmsSubmit): Promise<SmsSubmitResult>;
}

export const receiptsQueue = (queues: QueueRegistry): Queue<SmsReceipt> => queues.get<SmsReceipt>(SMS_RECEIPTS_QUEUE);
