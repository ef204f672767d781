// Call rows in Postgres. Every change of a call is one transaction that locks its row (SELECT ... FOR UPDATE), runs
// the pure state machine, writes the result and — when the call ended — its events and spend, so origination,
// carrier progress, timers and hangups of one call are serialized and each transition commits at most once.
import { callerIdStillUsable } from '../caller-ids/standing.ts';
import { notFound } from '../errors.ts';
import { assertCallContent } from '../sub-entities/content-policy.ts';
import { pgp, type Db, type WithinTx } from '../db.ts';
import { TurnBatcher } from '../batch.ts';
import { isUuid } from '../ids.ts';
import { eventsInsertSql, wakeRelay } from '../events/outbox.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import { spendDay } from './limits.ts';
import { step, type Input, type Step } from './machine.ts';
import type { CallRow } from './model.ts';
import { buildTranscript } from './transcript.ts';
import { bookDuringCall } from '../appointments/agent-booking.ts';
import { callEventPayload, endEvents } from './views.ts';


export type NewCall = Pick<CallRow,
  'id' | 'organization_id' | 'api_key_id' | 'user_id' | 'type' | 'from_number' | 'to_number' | 'connect_number'
  | 'phone_number_id' | 'agent_id' | 'agent' | 'record' | 'legs' | 'channels' | 'carrier' | 'time_scale'
  | 'max_duration_seconds' | 'ring_timeout_seconds' | 'price_cents_per_minute' | 'created_at'>
  & Partial<Pick<CallRow, 'spend_reserved_cents' | 'direction' | 'status' | 'originated_at' | 'sub_entity_id'>>;

/** Inserts a call (QUEUED and outbound unless `c` says otherwise: an inbound call starts RINGING) and its new_call event in one statement (one round trip, one implicit transaction); with
 *  `within` (a request's idempotency record), in one explicit transaction that also runs it. A process that places
 *  calls uses its CallInserts (CallRuntime.inserts), which also batches the calls of one event-loop turn. */
export function insertCall(db: Db, c: NewCall, within?: WithinTx<CallRow>): Promise<CallRow> {
  return insertWith(db, null, c, within);
}

/** The process's call inserts (one per CallRuntime): the calls placed in one event-loop turn without `within` share
 *  one statement (all rows or none); when it fails each call is inserted alone, so one bad row (say, a number
 *  released meanwhile) fails only its own request. */
export class CallInserts {
  private readonly batcher: TurnBatcher<CallRow, Error | null>;

  constructor(private readonly db: Db) {
    this.batcher = new TurnBatcher(async (rows) => {
      try {
        await db.none(insertSql(rows));
        return rows.map(() => null);
      } catch (err) {
        if (rows.length === 1) return [err as Error];
        return Promise.all(rows.map((r) => db.none(insertSql([r])).then(() => null, (e: Error) => e)));
      }
    });
  }

  insert(c: NewCall, within?: WithinTx<CallRow>): Promise<CallRow> {
    return insertWith(this.db, this.batcher, c, within);
  }
}

async function insertWith(db: Db, batcher: TurnBatcher<CallRow, Error | null> | null, c: NewCall, within?: WithinTx<CallRow>): Promise<CallRow> {
  const row: CallRow = {
    spend_reserved_cents: null, direction: 'outbound', status: 'QUEUED', originated_at: null, sub_entity_id: null, ...c, call_outcome: null, failure_code: null, failure_category: null,
    disconnection_reason: null, picked_up: false, cost_cents: 0, duration_seconds: null, answered_at: null,
    ended_at: null, transcript: null, updated_at: c.created_at,
  };
  if (within) {
    await db.tx('insert-call', async (tx) => { await tx.none(insertSql([row])); await within(tx, row); });
  } else if (batcher) {
    const failed = await batcher.add(row);
    if (failed) throw failed;
  } else {
    await db.none(insertSql([row]));
  }
  wakeRelay(db);
  return row;
}

const CALL_COLUMNS = new pgp.helpers.ColumnSet(['id', 'organization_id', 'api_key_id', 'user_id', 'type', 'direction', 'from_number',
  'to_number', 'connect_number', 'phone_number_id', 'sub_entity_id', 'agent_id', { name: 'agent', mod: ':json' }, 'record', 'status',
  { name: 'legs', mod: ':json' }, 'channels', 'carrier', 'time_scale', 'max_duration_seconds', 'ring_timeout_seconds',
  'price_cents_per_minute', 'created_at', 'updated_at', 'spend_reserved_cents', 'originated_at'], { table: 'calls' });

/** The calls and their new_call events: several statements in one simple query run as one implicit transaction. */
const insertSql = (rows: CallRow[]) =>
  `${pgp.helpers.insert(rows, CALL_COLUMNS)};\n${eventsInsertSql(rows.map((r) => ({ organizationId: r.organization_id, eventType: 'new_call', data: callEventPayload(r) })))}`;

/** from: the call's status before the input (the same as call.status when nothing changed). */
export interface Applied { step: Step; call: CallRow; from: CallRow['status'] }

/** Applies one input to a call in one transaction; null when the call does not exist.
 *  Two round trips: "BEGIN; SELECT ... FOR UPDATE", then one batch "UPDATE; INSERT events; upsert spend; COMMIT"
 *  (a transition runs for every carrier event, so round trips matter; any error rolls the transaction back). */
export async function applyInput(db: Db, callId: string, input: Input, organizationId?: string): Promise<Applied | null> {
  if (!isUuid(callId)) return null;
  const applied = await db.task('call-transition', async (t) => {
    let open = false;
    try {
      open = true;
      const row = await t.oneOrNone<CallRow>(
        `BEGIN; SELECT * FROM calls WHERE id = $1${organizationId ? ' AND organization_id = $2' : ''} FOR UPDATE`,
        [callId, organizationId],
      );
      const s = row ? step(row, await withCallerIdCheck(t, row, input)) : null;
      if (!row || !s || s.result !== 'applied') {
        await t.none('COMMIT');
        open = false;
        return row && s ? { step: s, call: row, from: row.status } : null;
      }
      const next: CallRow = { ...row, ...s.call, updated_at: new Date() };
      // The sandbox agent's booking script books inside this transaction (its event included), so the booking,
      // the transcript that tells it and the call's end commit together.
      if (s.ended) next.transcript = buildTranscript(next, await bookDuringCall(t, next, Date.now()));
      const batch = [updateSql(next)];
      if (s.ended) {
        batch.push(eventsInsertSql(endEvents(next).map((e) => ({ organizationId: next.organization_id, ...e }))));
        if (next.cost_cents > 0) {
          batch.push(pgp.as.format(
            `INSERT INTO org_daily_spend (organization_id, day, cents) VALUES ($1, $2, $3)
             ON CONFLICT (organization_id, day) DO UPDATE SET cents = org_daily_spend.cents + EXCLUDED.cents`,
            // A call's spend belongs to the UTC day it was admitted on (where its reservation was taken).
            [next.organization_id, spendDay(next.created_at), next.cost_cents],
          ));
        }
      }
      batch.push('COMMIT');
      await t.none(batch.join(';\n'));
      open = false;
      return { step: s, call: next, from: row.status };
    } catch (err) {
      if (open) await t.none('ROLLBACK').catch(() => undefined);
      throw err;
    }
  });
  if (applied?.step.ended) wakeRelay(db);
  return applied;
}

/** Origination re-checks, under the call's lock, that the caller ID is still the organization's ACTIVE number (it
 *  may have been released, and bought by another organization, while the call was queued). FOR SHARE holds off a
 *  concurrent release until this transaction ends, so a number is never released between the check and the move. */
async function withCallerIdCheck(t: { oneOrNone: Db['oneOrNone'] }, row: CallRow, input: Input): Promise<Input> {
  if (input.type !== 'originate' || row.status !== 'QUEUED') return input;
  // A call from a verified caller ID (no held number): still verified and not removed (shared/caller-ids).
  if (row.phone_number_id === null) {
    return (await callerIdStillUsable(t, row.organization_id, row.from_number)) ? input : { type: 'caller_id_released', at: input.at };
  }
  const held = await t.oneOrNone(
    `SELECT 1 FROM phone_numbers WHERE id = $1 AND organization_id = $2 AND status = 'ACTIVE' FOR SHARE`,
    [row.phone_number_id, row.organization_id]);
  return held ? input : { type: 'caller_id_released', at: input.at };
}

function updateSql(c: CallRow): string {
  return pgp.as.format(
    `UPDATE calls SET status = $2, legs = $3:json, picked_up = $4, originated_at = $5, answered_at = $6, ended_at = $7,
        call_outcome = $8, failure_code = $9, failure_category = $10, disconnection_reason = $11,
        duration_seconds = $12, cost_cents = $13, transcript = $14:json, updated_at = $15
      WHERE id = $1`,
    [c.id, c.status, c.legs, c.picked_up, c.originated_at, c.answered_at, c.ended_at, c.call_outcome, c.failure_code,
      c.failure_category, c.disconnection_reason, c.duration_seconds, c.cost_cents, c.transcript ?? null, c.updated_at],
  );
}

/** onlyUserId: the call only if that user placed it (an agent's credential reads only its own calls). */
/** A call of the organization, or null. onlyUserId: only a call that user placed (an agent's credential);
 *  onlySubEntityId: only a call of that sub-entity (a credential limited to it, shared/sub-entities/limit.ts). */
export async function getCall(db: Db, organizationId: string, id: string, onlyUserId: string | null = null,
  onlySubEntityId: string | null = null): Promise<CallRow | null> {
  if (!isUuid(id)) return null;
  return db.oneOrNone<CallRow>(`SELECT * FROM calls WHERE id = $1 AND organization_id = $2
      AND ($3::uuid IS NULL OR user_id = $3) AND ($4::uuid IS NULL OR sub_entity_id = $4)`, [id, organizationId, onlyUserId, onlySubEntityId]);
}

export async function loadCall(db: Db, id: string): Promise<CallRow | null> {
  if (!isUuid(id)) return null;
  return db.oneOrNone<CallRow>('SELECT * FROM calls WHERE id = $1', [id]);
}

/** Filters of the call log (GET /v1/calls): each narrows the list when set. */
export interface CallFilters { status?: string; direction?: string; sub_entity_id?: string }

export async function listCalls(db: Db, organizationId: string, p: PageParams, onlyUserId: string | null = null, f: CallFilters = {}): Promise<CallRow[]> {
  const values: unknown[] = [organizationId];
  let where = 'organization_id = $1';
  const and = (sql: string, v: unknown) => { values.push(v); where += ` AND ${sql} = $${values.length}`; };
  if (onlyUserId !== null) and('user_id', onlyUserId);
  if (f.status) and('status', f.status);
  if (f.direction) and('direction', f.direction);
  if (f.sub_entity_id) and('sub_entity_id', f.sub_entity_id);
  const k = keysetClause('id', p, values.length + 1);
  return db.any<CallRow>(`SELECT * FROM calls WHERE ${where}${k.where}${k.tail}`, [...values, ...k.values]);
}

/** A call of the organization whose content (transcript, recording, analysis) may be returned: not_found for an
 *  unknown or foreign call, content_policy_forbidden when the organization or the call's sub-entity pins content to a
 *  HIPAA boundary (the rule: shared/sub-entities/content-policy.ts). Every call-content route reads the call here. */
export async function callForContent(db: Db, organizationId: string, id: string, onlyUserId: string | null = null,
  onlySubEntityId: string | null = null): Promise<CallRow> {
  const call = await getCall(db, organizationId, id, onlyUserId, onlySubEntityId);
  if (!call) throw notFound(`Call ${id}`);
  await assertCallContent(db, organizationId, call);
  return call;
}
