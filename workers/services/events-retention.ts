import { pruneOldEvents } from '../../shared/events/retention.ts';
import type { Service } from '../processor.ts';

// Keeps the outbox and the delivery log from growing forever: hourly (first a minute after start, so a restart
// does not add to start-up load), relayed events and delivery attempts older than EVENTS_RETENTION_DAYS are
// deleted. Several workers processes may run it at once: a row deleted twice is simply not found the second time.
const EVERY_MS = 3600_000;
const FIRST_MS = 60_000;

export const eventsRetention: Service = {
  name: 'events-retention',
  async start(deps) {
    const days = deps.config.eventsRetentionDays;
    if (days === 0) return { stop: async () => undefined };
    let running: Promise<void> | null = null;
    const sweep = () => {
      running ??= pruneOldEvents(deps.db, days)
        .then((p) => { if (p.events || p.attempts) deps.log.info({ ...p, days }, 'pruned old events and delivery attempts'); })
        .catch((err) => deps.log.warn({ err: (err as Error).message }, 'events retention sweep failed'))
        .finally(() => { running = null; });
    };
    const first = setTimeout(sweep, FIRST_MS);
    const timer = setInterval(sweep, EVERY_MS);
    first.unref();
    timer.unref();
    return {
      stop: async () => {
        clearTimeout(first);
        clearInterval(timer);
        await running;
      },
    };
  },
};
