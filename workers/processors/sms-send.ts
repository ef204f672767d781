import { DelayedError } from 'bullmq';
import { SMS_SEND_QUEUE, type SendJob } from '../../shared/sms/messages.ts';
import { handOver } from '../../shared/sms/send.ts';
import { smsStatusChanges } from '../../shared/metrics/sms.ts';
import type { Processor } from '../processor.ts';

// Hands queued messages to the SMS carrier, each number at its paced rate (shared/sms/throughput.ts): a message
// whose slot has not come goes back to delayed with its slot kept in the job's data. The carrier, pacer and charges
// are the process's (deps.sms, built in workers/start.ts).

export const smsSend: Processor<SendJob> = {
  queue: SMS_SEND_QUEUE,
  concurrency: 20,
  async process(job, deps, token) {
    const p = deps.sms;
    const m = await deps.db.oneOrNone<{ local_number: string; status: string }>(
      'SELECT local_number, status FROM sms_messages WHERE id = $1', [job.data.messageId]);
    if (!m || m.status !== 'queued') return { skipped: true };
    const pace = await p.pacer.pace(m.local_number, job.data.slot ?? null);
    if (!pace.send) {
      if (job.data.slot !== pace.slot) await job.updateData({ ...job.data, slot: pace.slot });
      await job.moveToDelayed(Date.now() + pace.waitMs, token);
      throw new DelayedError();
    }
    const result = await handOver({ db: deps.db, charges: p.charges, carrier: p.carrier }, job.data.messageId);
    if (result !== 'skipped') smsStatusChanges.inc({ status: result });
    return { result };
  },
};
