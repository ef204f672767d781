import { ensureMonthPartitions } from '../../shared/partitions/partitions.ts';
import { periodic } from '../periodic.ts';
import type { Service } from '../processor.ts';

// Creates the monthly partitions of calls, SMS, events and delivery attempts ahead of time (the current month and
// PARTITION_MONTHS_AHEAD more), at start and then every six hours: a month's partition exists months before its
// first row, so even workers stopped for weeks leave no month uncovered. Idempotent; concurrent runs take turns.
const EVERY_MS = 6 * 3600_000;

export const partitionMaintenance: Service = {
  name: 'partition-maintenance',
  async start(deps) {
    return periodic('partition maintenance', EVERY_MS, async () => {
      const created = await ensureMonthPartitions(deps.db);
      if (created.length) deps.log.info({ created }, 'created monthly partitions');
    }, { log: deps.log });
  },
};
