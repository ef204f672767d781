// Spam-test sessions: one tester, a mode, and the queue of numbers saved when the session starts (from its scope).
// Creating a session reads stored evidence only: it never requests a paid fresh check.
//
//   status moves (PATCH {status}; evidence is never deleted):
//     ACTIVE (initial) -> PAUSED | COMPLETED | CANCELLED
//     PAUSED           -> ACTIVE | COMPLETED | CANCELLED
//     COMPLETED, CANCELLED: final
//   The same status again is a no-op (200). Attempts attach only while ACTIVE.
import type { Static } from '@sinclair/typebox';
import type { Db, Tx, WithinTx } from '../db.ts';
import { notFound, validationError, stateConflict } from '../errors.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import type { Outcome, TesterNetwork } from './policy.ts';
import type { AttemptResponse, SessionResponse } from './schemas.ts';
import { activeIdsInState } from './fleet.ts';

export const MODES = ['RAPID_AUDIT', 'HUMAN_READINESS', 'CONNECTIVITY_QA'] as const;
export type Mode = (typeof MODES)[number];
/** Modes where a person judges the handset: AI calls are refused as their evidence. */
export const HUMAN_MODES: readonly Mode[] = ['RAPID_AUDIT', 'HUMAN_READINESS'];
export const SCOPE_KINDS = ['ALL', 'TEAM', 'NUMBER_SET', 'AREA_CODE', 'FLAGGED', 'NEEDS_DATA'] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];
export const SESSION_STATUSES = ['ACTIVE', 'PAUSED', 'COMPLETED', 'CANCELLED'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

export const SESSION_MOVES: Record<SessionStatus, readonly SessionStatus[]> = {
  ACTIVE: ['PAUSED', 'COMPLETED', 'CANCELLED'],
  PAUSED: ['ACTIVE', 'COMPLETED', 'CANCELLED'],
  COMPLETED: [],
  CANCELLED: [],
};

export interface SessionInput {
  tester: { alias: string; phone_number: string; carrier: TesterNetwork; consented: boolean };
  mode: Mode;
  scope: { kind: ScopeKind; value?: string };
  compare_alternates?: boolean;
}

export interface SessionRow {
  id: string; organization_id: string; created_by_user_id: string; tester_alias: string; tester_phone: string;
  tester_carrier: TesterNetwork; tester_consented: boolean; mode: Mode; scope_kind: ScopeKind; scope_value: string | null;
  compare_alternates: boolean; phone_ids: number[]; status: SessionStatus; created_at: Date; updated_at: Date;
}

/** The tester's handset, as the observation recorded it. */
export interface Handset { manufacturer: string; model: string; os: string }

/** recordObservation writes an observation's columns in one UPDATE: all null before the first, all set after. */
type ObservationColumns =
  | { outcome: null; observed_label: null; handset: null; observed_at: null; observed_by_user_id: null }
  | { outcome: Outcome; observed_label: string; handset: Handset; observed_at: Date; observed_by_user_id: string };
/** The callback attestation's who and when are written together too: both null until an operator attests. */
type AttestationColumns =
  | { callback_attested_by_user_id: null; callback_attested_at: null }
  | { callback_attested_by_user_id: string; callback_attested_at: Date };

export type AttemptRow = {
  id: string; session_id: string; organization_id: string; phone_id: number; call_id: string; created_by_user_id: string;
  created_at: Date; callback_verified: boolean;
  /** Joined from the call. */
  call_direction?: string; call_status?: string; duration_seconds?: number | null;
} & ObservationColumns & AttestationColumns;

export function attemptView(a: AttemptRow): Static<typeof AttemptResponse> {
  return {
    id: a.id, session_id: a.session_id, phone_id: a.phone_id, call_id: a.call_id,
    call_direction: a.call_direction ?? null, call_status: a.call_status ?? null, duration_seconds: a.duration_seconds ?? null,
    created_by_user_id: a.created_by_user_id, created_at: a.created_at.toISOString(),
    observation: a.outcome === null ? null : {
      outcome: a.outcome, observed_label: a.observed_label, handset: a.handset, recorded_at: a.observed_at.toISOString(),
      recorded_by_user_id: a.observed_by_user_id,
    },
    callback_verified: a.callback_verified,
    callback_attestation: a.callback_attested_by_user_id
      ? { attested_by_user_id: a.callback_attested_by_user_id, attested_at: a.callback_attested_at.toISOString() } : null,
  };
}

export const sessionView = (s: SessionRow, attempts: AttemptRow[]): Static<typeof SessionResponse> => ({
  id: s.id,
  status: s.status,
  mode: s.mode,
  tester: { alias: s.tester_alias, phone_number: s.tester_phone, carrier: s.tester_carrier, consented: s.tester_consented },
  scope: { kind: s.scope_kind, value: s.scope_value },
  compare_alternates: s.compare_alternates,
  counts_toward_readiness: s.mode === 'HUMAN_READINESS',
  phone_ids: s.phone_ids,
  attempts: attempts.map(attemptView),
  created_by_user_id: s.created_by_user_id,
  created_at: s.created_at.toISOString(),
  updated_at: s.updated_at.toISOString(),
});

const ATTEMPT_COLUMNS = `a.*, c.direction AS call_direction, c.status AS call_status, c.duration_seconds`;

// pg answers bigint[] as strings (only scalar bigints are parsed as numbers, shared/db.ts).
const sessionRow = (r: SessionRow | null): SessionRow | null => (r ? { ...r, phone_ids: r.phone_ids.map(Number) } : null);

export async function findSession(q: Db | Tx, organizationId: string, id: string, lock = false): Promise<SessionRow | null> {
  if (!isUuid(id)) return null;
  return sessionRow(await q.oneOrNone(`SELECT * FROM spam_test_sessions WHERE id = $1 AND organization_id = $2${lock ? ' FOR UPDATE' : ''}`, [id, organizationId]));
}

export async function getSession(db: Db | Tx, organizationId: string, id: string): Promise<{ session: SessionRow; attempts: AttemptRow[] }> {
  const session = await findSession(db, organizationId, id);
  if (!session) throw notFound(`Spam-test session ${id}`);
  const attempts = await db.any<AttemptRow>(
    `SELECT ${ATTEMPT_COLUMNS} FROM spam_test_attempts a JOIN calls c ON c.id = a.call_id
      WHERE a.session_id = $1 ORDER BY a.created_at, a.id`, [id]);
  return { session, attempts };
}

export async function getAttempt(q: Db | Tx, organizationId: string, id: string, lock = false): Promise<AttemptRow | null> {
  if (!isUuid(id)) return null;
  return q.oneOrNone(
    `SELECT ${ATTEMPT_COLUMNS} FROM spam_test_attempts a JOIN calls c ON c.id = a.call_id
      WHERE a.id = $1 AND a.organization_id = $2${lock ? ' FOR UPDATE OF a' : ''}`, [id, organizationId]);
}

/** The queue of a new session: the ACTIVE numbers its scope names (plus ALTERNATE members with compare_alternates). */
async function queueOf(db: Db, organizationId: string, input: SessionInput, now: number): Promise<number[]> {
  const { kind, value } = input.scope;
  const needsValue = kind === 'TEAM' || kind === 'NUMBER_SET' || kind === 'AREA_CODE';
  if (needsValue && (value === undefined || value === '')) throw validationError({ 'scope.value': `is required for scope.kind ${kind}` });
  if (!needsValue && value !== undefined) throw validationError({ 'scope.value': `is not used with scope.kind ${kind}` });
  if (kind === 'AREA_CODE' && !/^[2-9][0-9]{2}$/.test(value!)) throw validationError({ 'scope.value': 'must be a three-digit area code' });
  let ids: number[];
  if (kind === 'NUMBER_SET') {
    const set = isUuid(value!) ? await db.oneOrNone('SELECT id FROM number_sets WHERE id = $1 AND organization_id = $2', [value, organizationId]) : null;
    if (!set) throw validationError({ 'scope.value': 'is not a Number Set of your organization' });
    ids = (await db.any<{ id: number }>(
      `SELECT p.id FROM number_set_members m JOIN phone_numbers p ON p.id = m.phone_id
        WHERE m.set_id = $1 AND m.state <> 'RETIRED' AND p.status = 'ACTIVE' AND (m.role = 'PRIMARY' OR $2) ORDER BY p.id`,
      [value, input.compare_alternates ?? false])).map((r) => r.id);
  } else if (kind === 'FLAGGED' || kind === 'NEEDS_DATA') {
    ids = await activeIdsInState(db, organizationId, kind, now);
  } else {
    const column = kind === 'TEAM' ? 'team_id' : kind === 'AREA_CODE' ? 'area_code' : null;
    ids = (await db.any<{ id: number }>(
      `SELECT id FROM phone_numbers WHERE organization_id = $1 AND status = 'ACTIVE'${column ? ` AND ${column} = $2` : ''} ORDER BY id`,
      [organizationId, value])).map((r) => r.id);
  }
  if (input.compare_alternates && kind !== 'NUMBER_SET' && ids.length) {
    // The alternates of the sets where a queued number is PRIMARY, to compare them side by side.
    const alt = await db.any<{ id: number }>(
      `SELECT DISTINCT p.id FROM number_set_members pm
         JOIN number_set_members am ON am.set_id = pm.set_id AND am.role = 'ALTERNATE' AND am.state <> 'RETIRED'
         JOIN phone_numbers p ON p.id = am.phone_id AND p.status = 'ACTIVE'
        WHERE pm.organization_id = $1 AND pm.role = 'PRIMARY' AND pm.phone_id = ANY($2::bigint[])`, [organizationId, ids]);
    ids = [...new Set([...ids, ...alt.map((r) => r.id)])].sort((a, b) => a - b);
  }
  if (!ids.length) throw validationError({ scope: `matches no active number (kind ${kind})` });
  return ids;
}

export async function createSession(db: Db, organizationId: string, userId: string, input: SessionInput, now: number,
  within?: WithinTx<SessionRow>): Promise<SessionRow> {
  const phoneIds = await queueOf(db, organizationId, input, now);
  return db.tx(async (tx) => {
    const at = new Date(now);
    const s = sessionRow(await tx.one<SessionRow>(
      `INSERT INTO spam_test_sessions (id, organization_id, created_by_user_id, tester_alias, tester_phone, tester_carrier,
         tester_consented, mode, scope_kind, scope_value, compare_alternates, phone_ids, status, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'ACTIVE', $13, $13) RETURNING *`,
      [uuidv7(now), organizationId, userId, input.tester.alias, input.tester.phone_number, input.tester.carrier,
        input.tester.consented, input.mode, input.scope.kind, input.scope.value ?? null, input.compare_alternates ?? false, phoneIds, at]))!;
    await within?.(tx, s);
    return s;
  });
}

export async function changeSessionStatus(db: Db, organizationId: string, id: string, status: SessionStatus, now: number,
  within?: WithinTx<{ session: SessionRow; attempts: AttemptRow[] }>): Promise<{ session: SessionRow; attempts: AttemptRow[] }> {
  return db.tx(async (tx) => {
    const s = await findSession(tx, organizationId, id, true);
    if (!s) throw notFound(`Spam-test session ${id}`);
    if (s.status !== status && !SESSION_MOVES[s.status].includes(status)) {
      throw stateConflict('number_health_session', s.status, `The session is ${s.status}; it cannot move to ${status}.`);
    }
    if (s.status !== status) {
      await tx.none('UPDATE spam_test_sessions SET status = $2, updated_at = $3 WHERE id = $1', [id, status, new Date(now)]);
    }
    const result = await getSession(tx, organizationId, id);
    await within?.(tx, result);
    return result;
  });
}
