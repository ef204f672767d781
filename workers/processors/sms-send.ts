import { DelayedError } from 'bullmq';
import type { SmsCarrier } from '../../shared/sms/carrier.ts';
import { createSmsCarrier } from '../../shared/sms/configured.ts';
import { SMS_SEND_QUEUE, type SendJob } from '../../shared/sms/messages.ts';
import { handOver } from '../../shared/sms/send.ts';
import { smsStatusChanges } from '../../shared/metrics/sms.ts';
import { NumberPacer } from '../../shared/sms/throughput.ts';
import { SpendAccounts } from '../../shared/spend/spend-accounts.ts';
import { SpendCharges } from '../../shared/spend/charges.ts';
import type { Processor, WorkerDeps } from '../processor.ts';

// Hands queued messages to the SMS carrier, each number at its paced rate (shared/sms/throughput.ts): a message
// whose slot has not come goes back to delayed with its slot kept in the job's data.
let parts: { pacer: NumberPacer; charges: SpendCharges; carrier: SmsCarrier } | null = null;

function partsOf(deps: WorkerDeps) {
  parts ??= {
    pacer: new NumberPacer(deps.redis, deps.key, deps.config.sms.numberRatePerSecond),
    charges: new SpendCharges(deps.db, new SpendAccounts(deps.redis, deps.key, deps.db)),
    carrier: createSmsCarrier(deps.redis, deps.config),
  };
  return parts;
}

export const smsSend: Processor<SendJob> = {
  queue: SMS_SEND_QUEUE,
  concurrency: 20,
  async process(job, deps, token) {
    const p = partsOf(deps);
    const m = await deps.db.oneOrNone<{ local_number: string; status: string }>(
      'SELECT local_number, status FROM sms_messages WHERE id = $1', [job.data.messageId]);
    if (!m || m.status !== 'queued') return { skipped: true };
    const pace = await p.pacer.pace(m.local_number, job.data.slot ?? null);
    if (!pace.send) {
      if (job.data.slot !== pace.slot) await job.updateData({ ...job.data, slot: pace.slot });
      await job.moveToDelayed(Date.now() + pace.waitMs, token);
      throw new DelayedError();
    }
    const result = await handOver({ db: deps.db, ...p }, job.data.messageId);
    if (result !== 'skipped') smsStatusChanges.inc({ status: result });
    return { result };
  },
};
