import { SMS_RECEIPTS_QUEUE, type SmsReceipt } from '../../shared/sms/carrier.ts';
import { applyReceipt } from '../../shared/sms/send.ts';
import type { Processor } from '../processor.ts';

// The SMS carrier's delivery receipts (sandbox: delayed jobs): sent -> delivered | undelivered. Idempotent.
export const smsReceipts: Processor<SmsReceipt> = {
  queue: SMS_RECEIPTS_QUEUE,
  concurrency: 20,
  async process(job, deps) {
    return { applied: await applyReceipt(deps.db, job.data) };
  },
};
