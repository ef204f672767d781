// Call rows in Postgres. Every change of a call is one transaction that locks its row (SELECT ... FOR UPDATE), runs
// the pure state machine, writes the result and — when the call ended — its events and spend, so origination,
// carrier progress, timers and hangups of one call are serialized and each transition commits at most once.
import type { Db, Tx } from '../db.ts';
import { recordEvent } from '../events/outbox.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import { spendDay } from './limits.ts';
import { step, type Input, type Step } from './machine.ts';
import type { CallRow } from './model.ts';
import { buildTranscript } from './transcript.ts';
import { callEventPayload, endEvents } from './views.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);

export type NewCall = Pick<CallRow,
  'id' | 'organization_id' | 'api_key_id' | 'user_id' | 'type' | 'from_number' | 'to_number' | 'connect_number'
  | 'phone_number_id' | 'agent_id' | 'agent' | 'record' | 'legs' | 'channels' | 'carrier' | 'time_scale'
  | 'max_duration_seconds' | 'ring_timeout_seconds' | 'price_cents_per_minute' | 'created_at'>;

/** Inserts a QUEUED call and its new_call event in one transaction. */
export async function insertCall(db: Db, c: NewCall): Promise<CallRow> {
  return db.tx('insert-call', async (tx) => {
    const row = await tx.one<CallRow>(
      `INSERT INTO calls (id, organization_id, api_key_id, user_id, type, from_number, to_number, connect_number,
         phone_number_id, agent_id, agent, record, legs, channels, carrier, time_scale, max_duration_seconds,
         ring_timeout_seconds, price_cents_per_minute, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11:json, $12, $13:json, $14, $15, $16, $17, $18, $19, $20, $20)
       RETURNING *`,
      [c.id, c.organization_id, c.api_key_id, c.user_id, c.type, c.from_number, c.to_number, c.connect_number,
        c.phone_number_id, c.agent_id, c.agent, c.record, c.legs, c.channels, c.carrier, c.time_scale,
        c.max_duration_seconds, c.ring_timeout_seconds, c.price_cents_per_minute, c.created_at],
    );
    await recordEvent(tx, { organizationId: c.organization_id, eventType: 'new_call', data: callEventPayload(row) });
    return row;
  });
}

export interface Applied { step: Step; call: CallRow }

/** Applies one input to a call in one transaction; null when the call does not exist. */
export async function applyInput(db: Db, callId: string, input: Input, organizationId?: string): Promise<Applied | null> {
  if (!isUuid(callId)) return null;
  return db.tx('call-transition', async (tx) => {
    const row = await tx.oneOrNone<CallRow>(
      `SELECT * FROM calls WHERE id = $1${organizationId ? ' AND organization_id = $2' : ''} FOR UPDATE`,
      [callId, organizationId],
    );
    if (!row) return null;
    const s = step(row, input);
    if (s.result !== 'applied') return { step: s, call: row };
    const next: CallRow = { ...row, ...s.call };
    if (s.ended) next.transcript = buildTranscript(next);
    await write(tx, next);
    if (s.ended) {
      for (const e of endEvents(next)) await recordEvent(tx, { organizationId: next.organization_id, ...e });
      if (next.cost_cents > 0) {
        await tx.none(
          `INSERT INTO org_daily_spend (organization_id, day, cents) VALUES ($1, $2, $3)
           ON CONFLICT (organization_id, day) DO UPDATE SET cents = org_daily_spend.cents + EXCLUDED.cents`,
          [next.organization_id, spendDay(next.ended_at!), next.cost_cents],
        );
      }
    }
    return { step: s, call: next };
  });
}

async function write(tx: Tx, c: CallRow): Promise<void> {
  await tx.none(
    `UPDATE calls SET status = $2, legs = $3:json, picked_up = $4, originated_at = $5, answered_at = $6, ended_at = $7,
        call_outcome = $8, failure_code = $9, failure_category = $10, disconnection_reason = $11,
        duration_seconds = $12, cost_cents = $13, transcript = $14:json, updated_at = now()
      WHERE id = $1`,
    [c.id, c.status, c.legs, c.picked_up, c.originated_at, c.answered_at, c.ended_at, c.call_outcome, c.failure_code,
      c.failure_category, c.disconnection_reason, c.duration_seconds, c.cost_cents, c.transcript ?? null],
  );
}

export async function getCall(db: Db, organizationId: string, id: string): Promise<CallRow | null> {
  if (!isUuid(id)) return null;
  return db.oneOrNone<CallRow>('SELECT * FROM calls WHERE id = $1 AND organization_id = $2', [id, organizationId]);
}

export async function loadCall(db: Db, id: string): Promise<CallRow | null> {
  if (!isUuid(id)) return null;
  return db.oneOrNone<CallRow>('SELECT * FROM calls WHERE id = $1', [id]);
}

export async function listCalls(db: Db, organizationId: string, p: PageParams): Promise<CallRow[]> {
  const k = keysetClause('id', p, 2);
  return db.any<CallRow>(`SELECT * FROM calls WHERE organization_id = $1${k.where}${k.tail}`, [organizationId, ...k.values]);
}

export async function contentPolicy(db: Db, organizationId: string): Promise<string> {
  const r = await db.one('SELECT content_policy FROM organizations WHERE id = $1', [organizationId]);
  return r.content_policy;
}
