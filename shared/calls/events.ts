// Call events into the outbox (`events` table), batched: the rows of one call change are written in the same
// statement as the change itself, and the relay is woken with one NOTIFY after the commit.
//
// Why not shared/events/outbox.ts recordEvent() here: it NOTIFYs inside the transaction, and PostgreSQL serializes
// the commits of notifying transactions on one lock held across their WAL flush; at dial rates that lock, not
// the work, bounds throughput. The rows written here are the same rows (uuidv7 id, organization, type, data), and
// the NOTIFY after commit wakes the relay the same way (the relay also polls, so a lost NOTIFY only delays).
import { EVENTS_CHANNEL, type NewEvent } from '../events/outbox.ts';
import { pgp, type Db } from '../db.ts';
import { uuidv7 } from '../ids.ts';

const columns = new pgp.helpers.ColumnSet(['id', 'organization_id', 'event_type', { name: 'data', mod: ':json' }], { table: 'events' });

/** One INSERT statement for the events (text to run inside the caller's statement or transaction). */
export function eventsInsertSql(events: NewEvent[]): string {
  if (!events.length) return '';
  return pgp.helpers.insert(events.map((e) => ({ id: uuidv7(), organization_id: e.organizationId, event_type: e.eventType, data: e.data })), columns);
}

const pending = new WeakSet<Db>();
const WAKE_MS = 5;

/** Wakes the outbox relay after a commit; commits within WAKE_MS share one NOTIFY (at high rates a NOTIFY per
 *  commit would be a query per commit). */
export function wakeRelay(db: Db): void {
  if (pending.has(db)) return;
  pending.add(db);
  setTimeout(() => {
    pending.delete(db);
    db.none(`NOTIFY ${EVENTS_CHANNEL}`).catch(() => undefined);
  }, WAKE_MS);
}
