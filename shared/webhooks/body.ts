import { hasFlatBody } from './event-types.ts';

export interface EventRecord {
  id: string;
  event_type: string;
  occurred_at: Date | string;
  data: Record<string, unknown>;
}

const iso = (d: Date | string) => (d instanceof Date ? d : new Date(d)).toISOString();

/** The exact bytes POSTed to the receiver (and signed).
 *  - every event except Optimize: {"id","event_type","occurred_at","data":{...payload}}
 *  - Optimize events (flat body): {"event","occurred_at", ...payload} where the payload carries `test` or
 *    `conversion`; `event` and `occurred_at` cannot be overridden by the payload. */
export function webhookBody(e: EventRecord): string {
  if (hasFlatBody(e.event_type)) {
    return JSON.stringify({ event: e.event_type, occurred_at: iso(e.occurred_at), ...omit(e.data, 'event', 'occurred_at') });
  }
  return JSON.stringify({ id: e.id, event_type: e.event_type, occurred_at: iso(e.occurred_at), data: e.data });
}

function omit(o: Record<string, unknown>, ...keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (!keys.includes(k)) out[k] = v;
  return out;
}
