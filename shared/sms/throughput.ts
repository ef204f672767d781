// The per-number throughput limit of outbound SMS: a 10DLC number sends at most SMS_NUMBER_RATE_PER_SECOND
// messages per second (Config.sms, default 1), across every workers process. Each message reserves the number's next
// free slot on its first visit (so messages go out in the order they were taken), waits for it as a delayed job, and
// is handed over only once the interval since the number's last hand-over has passed (throughput.lua).
import type { Redis } from 'ioredis';
import type { Keyer } from '../redis.ts';
import { defineScript, script } from '../redis-scripts.ts';

export type Pace = { send: true; slot: number } | { send: false; slot: number; waitMs: number };

export class NumberPacer {
  private readonly run;
  private readonly intervalMs: number;

  constructor(redis: Redis, private readonly key: Keyer, ratePerSecond: number) {
    defineScript(redis, 'olSmsPace', new URL('./throughput.lua', import.meta.url), 2);
    this.run = script(redis, 'olSmsPace');
    this.intervalMs = Math.max(1, Math.round(1000 / ratePerSecond));
  }

  /** slot: the message's slot from an earlier visit, or null. */
  async pace(number: string, slot: number | null): Promise<Pace> {
    const [send, s, wait] = (await this.run(this.key('sms', 'slot', number), this.key('sms', 'last', number),
      this.intervalMs, slot ?? -1)) as number[];
    return send === 1 ? { send: true, slot: s } : { send: false, slot: s, waitMs: wait };
  }
}
