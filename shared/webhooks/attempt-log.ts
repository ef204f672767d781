import { pgp, type Db } from '../db.ts';

export interface NewAttempt {
  subscription_id: string;
  organization_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  outcome: 'succeeded' | 'retrying' | 'failed';
  response_status: number | null;
  latency_ms: number;
  error: string | null;
  attempted_at: Date;
  next_attempt_at: Date | null;
  /** What was sent: the headers (signature, content type, user agent) and the body. */
  request_headers: Record<string, string> | null;
  request_body: string | null;
  /** What came back: the content type and the first 2 KiB of the body (null without a response). */
  response_content_type: string | null;
  response_body: string | null;
  response_body_truncated: boolean | null;
}

const columns = new pgp.helpers.ColumnSet([
  'subscription_id', 'organization_id', 'webhook_id', 'event_id', 'event_type', 'attempt', 'outcome',
  'response_status', 'latency_ms', 'error', 'attempted_at', 'next_attempt_at',
  { name: 'request_headers', mod: ':json' }, 'request_body', 'response_content_type', 'response_body', 'response_body_truncated',
], { table: 'webhook_delivery_attempts' });

/** Writes attempt rows in small batches (one multi-row INSERT per few milliseconds). `record` resolves once the
 *  row is committed, so a delivery job only completes after its attempt is logged. */
export class AttemptLog {
  private buf: { row: NewAttempt; done: (err?: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly db: Db, private readonly maxDelayMs = 5, private readonly maxBatch = 500) {}

  record(row: NewAttempt): Promise<void> {
    return new Promise((resolve, reject) => {
      this.buf.push({ row, done: (err) => (err ? reject(err) : resolve()) });
      if (this.buf.length >= this.maxBatch) void this.flush();
      else this.timer ??= setTimeout(() => void this.flush(), this.maxDelayMs);
    });
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.buf.splice(0);
    if (!batch.length) return;
    try {
      await this.db.none(pgp.helpers.insert(batch.map((b) => b.row), columns));
      for (const b of batch) b.done();
    } catch (err) {
      for (const b of batch) b.done(err);
    }
  }
}
