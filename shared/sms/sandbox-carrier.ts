// The sandbox SMS carrier (the default): no network; the outcome is chosen by the last four digits of the
// destination, like the calls' sandbox table. Delivery receipts are delayed jobs (sandbox seconds times
// SANDBOX_TIME_SCALE), so they survive restarts.
import type { Queue } from 'bullmq';
import type { SmsCarrier, SmsReceipt, SmsSubmit, SmsSubmitResult } from './carrier.ts';

export const SANDBOX_DELIVERY_SECONDS = 2;
export const SANDBOX_SLOW_DELIVERY_SECONDS = 60;

type Outcome =
  | { kind: 'delivered'; afterSeconds: number }
  | { kind: 'undelivered'; afterSeconds: number; error: string }
  | { kind: 'failed'; error: string };

const BY_LAST4: Record<string, Outcome> = {
  '0004': { kind: 'undelivered', afterSeconds: SANDBOX_DELIVERY_SECONDS, error: '30003: Unreachable destination handset' },
  '0005': { kind: 'failed', error: '30006: Landline or unreachable carrier' },
  '0006': { kind: 'failed', error: '30007: Message filtered by the carrier' },
  '0009': { kind: 'delivered', afterSeconds: SANDBOX_SLOW_DELIVERY_SECONDS },
};

/** The sandbox's SMS test numbers (docs/reference/sms.md shows this table). */
export const SANDBOX_SMS_NUMBERS: { last4: string; outcome: string }[] = [
  { last4: '0004', outcome: 'sent, then undelivered after 2 s: `30003: Unreachable destination handset`' },
  { last4: '0005', outcome: 'failed at submission: `30006: Landline or unreachable carrier`' },
  { last4: '0006', outcome: 'failed at submission: `30007: Message filtered by the carrier`' },
  { last4: '0009', outcome: 'sent, delivered after 60 s (slow delivery)' },
  { last4: 'other', outcome: 'sent, delivered after 2 s' },
];

export const sandboxSmsOutcome = (to: string): Outcome =>
  BY_LAST4[to.slice(-4)] ?? { kind: 'delivered', afterSeconds: SANDBOX_DELIVERY_SECONDS };

export class SandboxSmsCarrier implements SmsCarrier {
  readonly name = 'sandbox';
  constructor(private readonly receipts: Queue<SmsReceipt>, private readonly timeScale: number) {}

  async submit(m: SmsSubmit): Promise<SmsSubmitResult> {
    const providerId = `SBX${m.messageId.replace(/-/g, '')}`;
    const outcome = sandboxSmsOutcome(m.to);
    if (outcome.kind === 'failed') return { accepted: false, providerId, error: outcome.error };
    const delay = Math.round(outcome.afterSeconds * 1000 * this.timeScale);
    const receipt: SmsReceipt = {
      messageId: m.messageId, providerId, status: outcome.kind, error: outcome.kind === 'undelivered' ? outcome.error : null,
      at: new Date(Date.now() + delay).toISOString(),
    };
    // The job id makes a repeated submit (after a crash) schedule one receipt.
    await this.receipts.add(outcome.kind, receipt, {
      jobId: `receipt-${m.messageId}`, delay, attempts: 8, backoff: { type: 'exponential', delay: 200 },
      removeOnComplete: { age: 3600, count: 50_000 }, removeOnFail: { age: 7 * 86400 },
    });
    return { accepted: true, providerId };
  }
}
