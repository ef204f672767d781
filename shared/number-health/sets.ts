// Number Sets: named groups of owned numbers for caller-ID selection. Members are upserted (a PATCH never removes
// an omitted member); RETIRED only takes a member out of selection (no release, no billing change, history kept).
// A member is removed, or a whole set deleted, only when asked by name (removeMember, deleteSet): the numbers, their
// calls and their evidence stay; sessions keep the numbers they queued at creation.
import type { Static } from '@sinclair/typebox';
import type { Db, Tx, WithinTx } from '../db.ts';
import { notFound, validationError } from '../errors.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import type { MemberResponse, NumberSetResponse } from './schemas.ts';

export const MEMBER_ROLES = ['PRIMARY', 'ALTERNATE'] as const;
export const MEMBER_STATES = ['ACTIVE', 'STANDBY', 'PREPARING', 'RETIRED'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];
export type MemberState = (typeof MEMBER_STATES)[number];
export const DEFAULT_PRIORITY = 100;

export interface MemberInput { phone_id: number; role?: MemberRole; state?: MemberState; outbound_enabled?: boolean; priority?: number }
export interface SetInput { name?: string; use_case?: string; identification_guidance?: string; members?: MemberInput[] }

export interface MemberRow { set_id: string; phone_id: number; phone_number: string; role: MemberRole; state: MemberState; outbound_enabled: boolean; priority: number; updated_at: Date }
export interface SetRow {
  id: string; organization_id: string; name: string; use_case: string; identification_guidance: string;
  created_by_user_id: string; updated_by_user_id: string; created_at: Date; updated_at: Date; members: MemberRow[];
}

export const memberView = (m: MemberRow): Static<typeof MemberResponse> => ({
  phone_id: m.phone_id, phone_number: m.phone_number, role: m.role, state: m.state, outbound_enabled: m.outbound_enabled,
  priority: m.priority, updated_at: m.updated_at.toISOString(),
});

export const setView = (s: SetRow): Static<typeof NumberSetResponse> => ({
  id: s.id, name: s.name, use_case: s.use_case, identification_guidance: s.identification_guidance,
  members: s.members.map(memberView), created_by_user_id: s.created_by_user_id, updated_by_user_id: s.updated_by_user_id,
  created_at: s.created_at.toISOString(), updated_at: s.updated_at.toISOString(),
});

/** Members must be distinct numbers the organization holds (not RELEASED). */
async function checkMembers(q: Db | Tx, organizationId: string, members: MemberInput[]): Promise<void> {
  const fields: Record<string, string> = {};
  const seen = new Map<number, number>();
  members.forEach((m, i) => {
    const first = seen.get(m.phone_id);
    if (first !== undefined) fields[`members[${i}].phone_id`] = `repeats members[${first}]`;
    else seen.set(m.phone_id, i);
  });
  const ids = [...seen.keys()];
  const held = new Set((await q.any<{ id: number }>(
    `SELECT id FROM phone_numbers WHERE organization_id = $1 AND id = ANY($2::bigint[]) AND status <> 'RELEASED'`,
    [organizationId, ids])).map((r) => r.id));
  members.forEach((m, i) => {
    if (!held.has(m.phone_id)) fields[`members[${i}].phone_id`] ??= 'is not a number your organization holds';
  });
  if (Object.keys(fields).length) throw validationError(fields);
}

/** Upsert: existing members change only the fields given; new members take the defaults. */
async function upsertMembers(tx: Tx, organizationId: string, setId: string, members: MemberInput[]): Promise<void> {
  if (!members.length) return;
  const col = <K extends keyof MemberInput>(k: K) => members.map((m) => m[k] ?? null);
  const args = [setId, col('phone_id'), col('role'), col('state'), col('outbound_enabled'), col('priority'), organizationId];
  await tx.none(
    `UPDATE number_set_members m SET role = COALESCE(u.role, m.role), state = COALESCE(u.state, m.state),
            outbound_enabled = COALESCE(u.outbound_enabled, m.outbound_enabled), priority = COALESCE(u.priority, m.priority),
            updated_at = now()
       FROM unnest($2::bigint[], $3::text[], $4::text[], $5::boolean[], $6::int[]) AS u(phone_id, role, state, outbound_enabled, priority)
      WHERE m.set_id = $1 AND m.phone_id = u.phone_id`, args);
  await tx.none(
    `INSERT INTO number_set_members (set_id, phone_id, organization_id, role, state, outbound_enabled, priority)
     SELECT $1, u.phone_id, $7, COALESCE(u.role, 'PRIMARY'), COALESCE(u.state, 'ACTIVE'), COALESCE(u.outbound_enabled, true),
            COALESCE(u.priority, ${DEFAULT_PRIORITY})
       FROM unnest($2::bigint[], $3::text[], $4::text[], $5::boolean[], $6::int[]) AS u(phone_id, role, state, outbound_enabled, priority)
     ON CONFLICT (set_id, phone_id) DO NOTHING`, args);
}

async function membersOf(q: Db | Tx, setIds: string[]): Promise<Map<string, MemberRow[]>> {
  const out = new Map<string, MemberRow[]>(setIds.map((id) => [id, []]));
  if (!setIds.length) return out;
  const rows = await q.any<MemberRow>(
    `SELECT m.set_id, m.phone_id, p.phone_number, m.role, m.state, m.outbound_enabled, m.priority, m.updated_at
       FROM number_set_members m JOIN phone_numbers p ON p.id = m.phone_id
      WHERE m.set_id = ANY($1::uuid[]) ORDER BY m.priority, m.phone_id`, [setIds]);
  for (const r of rows) out.get(r.set_id)!.push(r);
  return out;
}

async function readSet(q: Db | Tx, organizationId: string, id: string, lock = false): Promise<SetRow | null> {
  if (!isUuid(id)) return null;
  const s = await q.oneOrNone(`SELECT * FROM number_sets WHERE id = $1 AND organization_id = $2${lock ? ' FOR UPDATE' : ''}`, [id, organizationId]);
  if (!s) return null;
  return { ...s, members: (await membersOf(q, [id])).get(id)! };
}

export async function getSet(db: Db, organizationId: string, id: string): Promise<SetRow> {
  const s = await readSet(db, organizationId, id);
  if (!s) throw notFound(`Number Set ${id}`);
  return s;
}

export async function createSet(db: Db, organizationId: string, userId: string, input: SetInput & { name: string },
  within?: WithinTx<SetRow>): Promise<SetRow> {
  const members = input.members ?? [];
  await checkMembers(db, organizationId, members);
  return db.tx(async (tx) => {
    const id = uuidv7();
    await tx.none(
      `INSERT INTO number_sets (id, organization_id, name, use_case, identification_guidance, created_by_user_id, updated_by_user_id)
       VALUES ($1, $2, $3, $4, $5, $6, $6)`,
      [id, organizationId, input.name, input.use_case ?? '', input.identification_guidance ?? '', userId]);
    await upsertMembers(tx, organizationId, id, members);
    const s = (await readSet(tx, organizationId, id))!;
    await within?.(tx, s);
    return s;
  });
}

export async function updateSet(db: Db, organizationId: string, id: string, userId: string, input: SetInput,
  within?: WithinTx<SetRow>): Promise<SetRow> {
  await getSet(db, organizationId, id);
  const members = input.members ?? [];
  await checkMembers(db, organizationId, members);
  return db.tx(async (tx) => {
    if (!await readSet(tx, organizationId, id, true)) throw notFound(`Number Set ${id}`);
    await tx.none(
      `UPDATE number_sets SET name = COALESCE($3, name), use_case = COALESCE($4, use_case),
              identification_guidance = COALESCE($5, identification_guidance), updated_by_user_id = $6, updated_at = now(),
              version = version + 1
        WHERE id = $1 AND organization_id = $2`,
      [id, organizationId, input.name ?? null, input.use_case ?? null, input.identification_guidance ?? null, userId]);
    await upsertMembers(tx, organizationId, id, members);
    const s = (await readSet(tx, organizationId, id))!;
    await within?.(tx, s);
    return s;
  });
}

/** Takes one number out of a set (the number itself, its calls and evidence stay). Not a member: not_found. */
export async function removeMember(db: Db, organizationId: string, id: string, phoneId: number, userId: string,
  within?: WithinTx<SetRow>): Promise<SetRow> {
  return db.tx(async (tx) => {
    if (!await readSet(tx, organizationId, id, true)) throw notFound(`Number Set ${id}`);
    const gone = await tx.oneOrNone('DELETE FROM number_set_members WHERE set_id = $1 AND phone_id = $2 RETURNING phone_id', [id, phoneId]);
    if (!gone) throw notFound(`Member ${phoneId} of Number Set ${id}`);
    // The version moves so every gateway's cached selection ranking of this set is recomputed.
    await tx.none('UPDATE number_sets SET updated_by_user_id = $3, updated_at = now(), version = version + 1 WHERE id = $1 AND organization_id = $2',
      [id, organizationId, userId]);
    const s = (await readSet(tx, organizationId, id))!;
    await within?.(tx, s);
    return s;
  });
}

/** Deletes a set and its memberships; dialing with its id then answers validation_error (no such set). */
export async function deleteSet(db: Db, organizationId: string, id: string, within?: WithinTx<void>): Promise<void> {
  await db.tx(async (tx) => {
    if (!await readSet(tx, organizationId, id, true)) throw notFound(`Number Set ${id}`);
    await tx.none('DELETE FROM number_set_members WHERE set_id = $1', [id]);
    await tx.none('DELETE FROM number_sets WHERE id = $1 AND organization_id = $2', [id, organizationId]);
    await within?.(tx, undefined);
  });
}

export async function listSets(db: Db, organizationId: string, p: PageParams): Promise<{ rows: SetRow[]; total: number }> {
  const k = keysetClause('id', p, 2);
  const [rows, total] = await Promise.all([
    db.any(`SELECT * FROM number_sets WHERE organization_id = $1${k.where}${k.tail}`, [organizationId, ...k.values]),
    db.one<{ n: number }>('SELECT count(*)::int AS n FROM number_sets WHERE organization_id = $1', [organizationId]),
  ]);
  const members = await membersOf(db, rows.map((r) => r.id));
  return { rows: rows.map((r) => ({ ...r, members: members.get(r.id)! })), total: total.n };
}

/** Set memberships of a batch of numbers (the fleet list shows them). */
export async function membershipsOf(db: Db | Tx, organizationId: string, phoneIds: number[]) {
  const out = new Map<number, { number_set_id: string; role: MemberRole; state: MemberState; outbound_enabled: boolean; priority: number }[]>();
  if (!phoneIds.length) return out;
  const rows = await db.any(
    `SELECT phone_id, set_id AS number_set_id, role, state, outbound_enabled, priority FROM number_set_members
      WHERE organization_id = $1 AND phone_id = ANY($2::bigint[]) ORDER BY set_id`, [organizationId, phoneIds]);
  for (const { phone_id, ...m } of rows) {
    const list = out.get(phone_id);
    if (list) list.push(m); else out.set(phone_id, [m]);
  }
  return out;
}
