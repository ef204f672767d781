// The platform's state right now, read at scrape time by the workers' /metrics: live calls by status and outbound
// messages not final yet (PostgreSQL, through partial indexes), channels in use and live legs (the Redis accounts).
// These are global: every workers process reports the same values, so aggregate them with max (not sum) across
// processes. Each read is shared for a few seconds (cachedRead).
import { LegAccounts } from '../channels/legs.ts';
import { ChannelAccounts } from '../channels/channel-accounts.ts';
import { LIVE_STATUSES } from '../calls/model.ts';
import type { ProcessDeps } from '../process.ts';
import { cachedRead } from './cached.ts';
import { gaugeLines } from './exposition.ts';
import type { MetricsSource } from './process-metrics.ts';

/** How long one scrape's global reads are reused. */
export const GLOBAL_GAUGES_CACHE_MS = 5_000;
/** A store that does not answer within this leaves its gauges out of the scrape. */
export const GLOBAL_GAUGES_TIMEOUT_MS = 3_000;

/** Outbound SMS statuses that are not final: waiting for the hand-over, handed over and waiting for the receipt. */
const PENDING_SMS = ['queued', 'sent'] as const;
const LEG_ROLES = ['browser', 'destination', 'connect'];

export function platformGauges(deps: Pick<ProcessDeps, 'db' | 'redis' | 'key'>): MetricsSource[] {
  const { db } = deps;
  const channels = new ChannelAccounts(deps.redis, deps.key, db);
  const legs = new LegAccounts(deps.redis, deps.key);
  const cached = <T>(read: () => Promise<T>) => cachedRead(GLOBAL_GAUGES_CACHE_MS, GLOBAL_GAUGES_TIMEOUT_MS, read);

  // calls_live (ended_at IS NULL) holds exactly the live calls.
  const calls = cached(() => db.any<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM calls WHERE ended_at IS NULL GROUP BY status'));
  // sms_messages_pending (025_metrics_indexes.sql) holds exactly these.
  const sms = cached(() => db.any<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM sms_messages WHERE status IN ('queued', 'sent') GROUP BY status`));
  const redisState = cached(async () => ({ channels: await channels.totalUsed(), legs: await legs.counts() }));

  return [
    { name: 'calls', collect: async () => {
      const by = new Map((await calls()).map((r) => [r.status, r.n]));
      return gaugeLines('openline_calls', 'Live calls (not ended) by status, all processes together.',
        LIVE_STATUSES.map((s) => [{ status: s }, by.get(s) ?? 0]));
    } },
    { name: 'sms', collect: async () => {
      const by = new Map((await sms()).map((r) => [r.status, r.n]));
      return gaugeLines('openline_sms_messages', 'Outbound messages not final yet, by status (queued: waiting for the '
        + 'hand-over; sent: handed over, waiting for the delivery receipt).', PENDING_SMS.map((s) => [{ status: s }, by.get(s) ?? 0]));
    } },
    { name: 'channels', collect: async () => {
      const r = await redisState();
      const byRole = new Map<string, number>(LEG_ROLES.map((role) => [role, 0]));
      for (const roles of r.legs.values()) for (const [role, n] of roles) byRole.set(role, (byRole.get(role) ?? 0) + n);
      return [
        ...gaugeLines('openline_channels_in_use', 'Channels held by live calls, all organizations together.', [[{}, r.channels]]),
        ...gaugeLines('openline_live_legs', 'Live call legs by role (browser, destination, connect), all organizations together.',
          [...byRole].map(([role, n]) => [{ role }, n])),
      ];
    } },
  ];
}
