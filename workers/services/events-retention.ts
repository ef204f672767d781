import { pruneOldEvents, RETENTION_BATCH } from '../../shared/events/retention.ts';
import { IDEMPOTENCY_RETENTION_MS } from '../../shared/idempotency/idempotency-store.ts';
import { pruneIdempotencyRecords } from '../../shared/idempotency/records.ts';
import { dropPartitionsBefore } from '../../shared/partitions/partitions.ts';
import { periodic } from '../periodic.ts';
import type { Service } from '../processor.ts';

// Keeps the outbox and the delivery log from growing forever: hourly (first a minute after start, so a restart
// does not add to start-up load), relayed events and delivery attempts older than EVENTS_RETENTION_DAYS are
// deleted (EVENTS_RETENTION_DAYS=0 keeps them), and so are idempotency records past their 24 hours (always).
// Whole monthly partitions (migration 040) whose every row is past the retention are dropped first (an events
// partition only once none of its events waits for the relay); what is left old in the current partitions is
// deleted in batches. Several workers processes may run it at once: a row deleted twice is simply not found the
// second time, and a partition is dropped by whichever process gets its lock.
const EVERY_MS = 3600_000;
const FIRST_MS = 60_000;

export const eventsRetention: Service = {
  name: 'events-retention',
  async start(deps) {
    const days = deps.config.eventsRetentionDays;
    const pruneAll = async () => {
      if (days > 0) {
        const cutoff = new Date(Date.now() - days * 86_400_000);
        for (const table of ['events', 'webhook_delivery_attempts']) {
          const dropped = await dropPartitionsBefore(deps.db, table, cutoff);
          if (dropped.length) deps.log.info({ dropped, days }, 'dropped partitions past the retention');
        }
        const p = await pruneOldEvents(deps.db, days);
        if (p.events || p.attempts) deps.log.info({ ...p, days }, 'pruned old events and delivery attempts');
      }
      const idempotency = await pruneIdempotencyRecords(deps.db, IDEMPOTENCY_RETENTION_MS, RETENTION_BATCH);
      if (idempotency) deps.log.info({ idempotency }, 'pruned expired idempotency records');
    };
    return periodic('retention sweep', EVERY_MS, pruneAll, { firstMs: FIRST_MS, log: deps.log });
  },
};
