import type { Tx } from '../db.ts';
import { uuidv7 } from '../ids.ts';

export const EVENTS_CHANNEL = 'ol_events';

export interface NewEvent {
  organizationId: string;
  eventType: string;
  /** The payload: the `data` of the webhook body (or, for Optimize events, the flat body without `event`). */
  data: Record<string, unknown>;
}

/** Writes an event inside the caller's transaction, so it exists exactly when the change that caused it commits.
 *  NOTIFY is delivered on commit and wakes the relay; the relay also polls, so a lost notification only delays. */
export async function recordEvent(tx: Tx, e: NewEvent): Promise<string> {
  const id = uuidv7();
  await tx.none(
    `INSERT INTO events (id, organization_id, event_type, data) VALUES ($1, $2, $3, $4); NOTIFY ${EVENTS_CHANNEL}`,
    [id, e.organizationId, e.eventType, e.data],
  );
  return id;
}
