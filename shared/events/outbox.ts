import { pgp, type Db, type Tx } from '../db.ts';
import { uuidv7 } from '../ids.ts';

// The transactional outbox: event rows are written in the transaction (or statement) that makes the change they
// report, so an event exists exactly when its change committed. After the commit the writer wakes the relay with
// wakeRelay(); the relay also polls, so a lost wake-up only delays.
//
// The NOTIFY is sent after the commit, not inside the transaction: PostgreSQL serializes the commits of notifying
// transactions on one lock held across their WAL flush, which at call rates bounds throughput.

export const EVENTS_CHANNEL = 'ol_events';

export interface NewEvent {
  organizationId: string;
  eventType: string;
  /** The payload: the `data` of the webhook body (or, for Optimize events, the flat body without `event`). */
  data: Record<string, unknown>;
  /** Set by recordEvent, which returns it; otherwise a new UUIDv7. */
  id?: string;
}

const columns = new pgp.helpers.ColumnSet(['id', 'organization_id', 'event_type', { name: 'data', mod: ':json' }], { table: 'events' });

/** One INSERT statement for the events, to run inside the caller's statement or transaction ('' for none). */
export function eventsInsertSql(events: NewEvent[]): string {
  if (!events.length) return '';
  return pgp.helpers.insert(events.map((e) => ({ id: e.id ?? uuidv7(), organization_id: e.organizationId, event_type: e.eventType, data: e.data })), columns);
}

/** Writes one event inside the caller's transaction and returns its id; call wakeRelay(db) once it has committed. */
export async function recordEvent(tx: Tx, e: NewEvent): Promise<string> {
  const id = e.id ?? uuidv7();
  await tx.none(eventsInsertSql([{ ...e, id }]));
  return id;
}

// Per database: whether a NOTIFY is in flight, and whether another wake-up arrived meanwhile. A WeakMap on purpose:
// the state belongs to the pool's NOTIFY stream, and wakeRelay(db) is called from every commit path that has only db.
const waking = new WeakMap<Db, { again: boolean }>();

/** Wakes the outbox relay after a commit. The NOTIFY goes out at once; wake-ups that arrive while it is in flight
 *  share one more NOTIFY after it, so at high commit rates there is not a query per commit. */
export function wakeRelay(db: Db): void {
  const w = waking.get(db);
  if (w) { w.again = true; return; }
  const state = { again: false };
  waking.set(db, state);
  db.none(`NOTIFY ${EVENTS_CHANNEL}`).catch(() => undefined).finally(() => {
    waking.delete(db);
    if (state.again) wakeRelay(db);
  });
}
