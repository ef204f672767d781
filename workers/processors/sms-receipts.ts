import { SMS_RECEIPTS_QUEUE, type SmsReceipt } from '../../shared/sms/carrier.ts';
import { applyReceipt } from '../../shared/sms/send.ts';
import { smsStatusChanges } from '../../shared/metrics/sms.ts';
import type { Processor } from '../processor.ts';

// The SMS carrier's delivery receipts (sandbox: delayed jobs): sent -> delivered | undelivered. Idempotent.
export const smsReceipts: Processor<SmsReceipt> = {
  queue: SMS_RECEIPTS_QUEUE,
  concurrency: 20,
  async process(job, deps) {
    const applied = await applyReceipt(deps.db, job.data);
    if (applied) smsStatusChanges.inc({ status: job.data.status });
    return { applied };
  },
};
