// Sub-entities: the units an organization runs under one account (clinics, branches, client accounts). Numbers,
// calls, contacts and SMS messages may belong to one (sub_entity_id); a sub-entity is deleted only when nothing does.
// HIPAA mode (hipaa_mode) is changed here too, always with an audit row in the same transaction; what it hides is
// decided in content-policy.ts.
import type { Principal } from '../accounts/principal.ts';
import { writeWithin, type Db, type Tx, type WithinTx } from '../db.ts';
import { DomainError, notFound, stateConflict, validationError } from '../errors.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { assertWholeOrganization } from './limit.ts';
import { keysetClause, type PageParams } from '../pagination.ts';

export interface SubEntityRow {
  id: string;
  organization_id: string;
  name: string;
  external_ref: string | null;
  metadata: Record<string, string>;
  hipaa_mode: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface HipaaAuditRow {
  id: string;
  organization_id: string;
  sub_entity_id: string;
  old_value: boolean;
  new_value: boolean;
  credential_kind: string;
  credential_id: string;
  api_key_id: string | null;
  user_id: string | null;
  client_address: string;
  changed_at: Date;
  reason: string | null;
}

export interface SubEntityInput { name: string; external_ref?: string | null; metadata?: Record<string, string> }
export interface SubEntityPatch { name?: string; external_ref?: string | null; metadata?: Record<string, string>; hipaa_mode?: boolean; hipaa_reason?: string }

/** Who changes HIPAA mode, for its audit row. */
export interface HipaaActor { principal: Principal; clientAddress: string }

const NOT_OURS = 'is not a sub-entity of your organization';

export async function createSubEntity(db: Db, organizationId: string, input: SubEntityInput,
  within?: WithinTx<SubEntityRow>): Promise<SubEntityRow> {
  return writeWithin(db, within, (q) => q.one<SubEntityRow>(
    `INSERT INTO sub_entities (id, organization_id, name, external_ref, metadata) VALUES ($1, $2, $3, $4, $5:json) RETURNING *`,
    [uuidv7(), organizationId, input.name, input.external_ref ?? null, input.metadata ?? {}]));
}

/** A sub-entity of the organization, or null (another organization's included). */
export async function findSubEntity(db: Db | Tx, organizationId: string, id: string): Promise<SubEntityRow | null> {
  if (!isUuid(id)) return null;
  return db.oneOrNone<SubEntityRow>('SELECT * FROM sub_entities WHERE id = $1 AND organization_id = $2', [id, organizationId]);
}

export async function getSubEntity(db: Db | Tx, organizationId: string, id: string): Promise<SubEntityRow> {
  const row = await findSubEntity(db, organizationId, id);
  if (!row) throw notFound(`Sub-entity ${id}`);
  return row;
}

/** A sub_entity_id given in a request body for another resource: null stays null (detaches), an id must be one of
 *  the organization's sub-entities, else validation_error naming the field (as other foreign ids in bodies are). */
export async function assertSubEntityOf(db: Db | Tx, organizationId: string, id: string | null | undefined,
  field = 'sub_entity_id'): Promise<void> {
  if (id === undefined || id === null) return;
  if (!(await findSubEntity(db, organizationId, id))) throw validationError({ [field]: NOT_OURS });
}

/** A sub_entity_id named for something sent from one of the organization's numbers (an SMS): the number's own
 *  sub-entity binds (naming another is a validation_error), and a named one must be the organization's. */
export async function assertSubEntityForNumber(db: Db | Tx, organizationId: string, id: string | null | undefined,
  phoneNumber: string, field = 'sub_entity_id'): Promise<void> {
  if (id === undefined || id === null) return;
  const r = isUuid(id) ? await db.one<{ ours: boolean; bound: string | null }>(
    `SELECT EXISTS (SELECT 1 FROM sub_entities WHERE id = $1 AND organization_id = $2) AS ours,
            (SELECT sub_entity_id FROM phone_numbers WHERE organization_id = $2 AND phone_number = $3 AND status <> 'RELEASED') AS bound`,
    [id, organizationId, phoneNumber]) : { ours: false, bound: null };
  if (!r.ours) throw validationError({ [field]: NOT_OURS });
  if (r.bound !== null && r.bound !== id) throw validationError({ [field]: `must be ${r.bound}, the sub-entity of ${phoneNumber} (or omitted)` });
}

/** A sub_entity_id list filter: a malformed id is a validation_error; an id of no sub-entity simply matches nothing. */
export function assertSubEntityFilter(id: string | undefined, field = 'sub_entity_id'): void {
  if (id !== undefined && !isUuid(id)) throw validationError({ [field]: 'must be a sub-entity id (uuid)' });
}

export async function listSubEntities(db: Db, organizationId: string, p: PageParams, f: { hipaa_mode?: boolean; id?: string } = {}): Promise<SubEntityRow[]> {
  const values: unknown[] = [organizationId];
  let where = 'organization_id = $1';
  if (f.id !== undefined) { values.push(f.id); where += ` AND id = $${values.length}`; }
  if (f.hipaa_mode !== undefined) { values.push(f.hipaa_mode); where += ` AND hipaa_mode = $${values.length}`; }
  const k = keysetClause('id', p, values.length + 1);
  return db.any<SubEntityRow>(`SELECT * FROM sub_entities WHERE ${where}${k.where}${k.tail}`, [...values, ...k.values]);
}

/** Changes the fields given. hipaa_mode needs compliance:write (checked here, not only by the route, so no other
 *  caller can skip it) and writes its audit row in the same transaction when the value changes. */
export async function updateSubEntity(db: Db, organizationId: string, id: string, patch: SubEntityPatch, actor: HipaaActor,
  within?: WithinTx<SubEntityRow>): Promise<SubEntityRow> {
  if (patch.hipaa_mode !== undefined && !actor.principal.scopes.has('compliance:write')) {
    throw new DomainError('scope_missing', 'Changing hipaa_mode needs the compliance:write scope (never granted by default).',
      { fields: { hipaa_mode: 'needs the compliance:write scope' } });
  }
  if (patch.hipaa_mode !== undefined) assertWholeOrganization(actor.principal, 'changing hipaa_mode', 'hipaa_mode');
  return db.tx('sub-entity-update', async (tx) => {
    const before = await tx.oneOrNone<SubEntityRow>(
      'SELECT * FROM sub_entities WHERE id = $1 AND organization_id = $2 FOR UPDATE', [isUuid(id) ? id : null, organizationId]);
    if (!before) throw notFound(`Sub-entity ${id}`);
    const row = await tx.one<SubEntityRow>(
      `UPDATE sub_entities SET name = COALESCE($3, name),
              external_ref = CASE WHEN $4 THEN $5 ELSE external_ref END,
              metadata = COALESCE($6:json, metadata), hipaa_mode = COALESCE($7, hipaa_mode), updated_at = now()
        WHERE id = $1 RETURNING *`,
      [id, organizationId, patch.name ?? null, patch.external_ref !== undefined, patch.external_ref ?? null,
        patch.metadata ?? null, patch.hipaa_mode ?? null]);
    if (patch.hipaa_mode !== undefined && patch.hipaa_mode !== before.hipaa_mode) {
      const p = actor.principal;
      await tx.none(
        `INSERT INTO sub_entity_hipaa_audit (id, organization_id, sub_entity_id, old_value, new_value, credential_kind,
                credential_id, api_key_id, user_id, client_address, reason) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [uuidv7(), organizationId, id, before.hipaa_mode, patch.hipaa_mode, p.kind, p.keyId,
          p.kind === 'api_key' ? p.keyId : null, p.userId, actor.clientAddress, patch.hipaa_reason ?? null]);
    }
    await within?.(tx, row);
    return row;
  });
}

/** What belongs to a sub-entity, by kind (held numbers, live contacts, calls, SMS messages, live agents, documents). */
export async function belongings(db: Db | Tx, id: string) {
  return db.one<{ phone_numbers: number; contacts: number; calls: number; sms_messages: number; agents: number; documents: number }>(
    `SELECT (SELECT count(*)::int FROM phone_numbers WHERE sub_entity_id = $1 AND status <> 'RELEASED') AS phone_numbers,
            (SELECT count(*)::int FROM contacts WHERE sub_entity_id = $1 AND deleted_at IS NULL) AS contacts,
            (SELECT count(*)::int FROM calls WHERE sub_entity_id = $1) AS calls,
            (SELECT count(*)::int FROM sms_messages WHERE sub_entity_id = $1) AS sms_messages,
            (SELECT count(*)::int FROM agents WHERE sub_entity_id = $1 AND deleted_at IS NULL) AS agents,
            (SELECT count(*)::int FROM documents WHERE sub_entity_id = $1) AS documents`, [id]);
}

/** Deletes a sub-entity nothing belongs to; otherwise state_conflict (status in_use) saying what belongs to it.
 *  Calls and SMS messages are history that keeps its sub-entity (and so its HIPAA boundary): once a sub-entity has
 *  any, it stays. Released numbers and deleted contacts are detached. */
export async function deleteSubEntity(db: Db, organizationId: string, id: string, within?: WithinTx<void>): Promise<void> {
  await db.tx('sub-entity-delete', async (tx) => {
    const row = await tx.oneOrNone('SELECT id FROM sub_entities WHERE id = $1 AND organization_id = $2 FOR UPDATE',
      [isUuid(id) ? id : null, organizationId]);
    if (!row) throw notFound(`Sub-entity ${id}`);
    const b = await belongings(tx, id);
    const held = Object.entries(b).filter(([, n]) => n > 0);
    if (held.length) {
      throw stateConflict('sub_entity', 'in_use', `Sub-entity ${id} still has ${held.map(([k, n]) => `${n} ${k}`).join(', ')}; `
        + 'move or remove them first (calls and SMS messages are history and keep their sub-entity).',
        { resolutionHint: 'Set sub_entity_id to another sub-entity (or null) on its phone numbers and contacts.' });
    }
    await tx.none(`UPDATE phone_numbers SET sub_entity_id = NULL WHERE sub_entity_id = $1`, [id]);
    await tx.none(`UPDATE contacts SET sub_entity_id = NULL WHERE sub_entity_id = $1`, [id]);
    await tx.none(`UPDATE agents SET sub_entity_id = NULL WHERE sub_entity_id = $1`, [id]);
    await tx.none('DELETE FROM sub_entities WHERE id = $1', [id]);
    await within?.(tx, undefined);
  });
}

export async function listHipaaAudit(db: Db, organizationId: string, id: string, p: PageParams): Promise<HipaaAuditRow[]> {
  await getSubEntity(db, organizationId, id);
  const k = keysetClause('id', p, 3);
  return db.any<HipaaAuditRow>(`SELECT * FROM sub_entity_hipaa_audit WHERE organization_id = $1 AND sub_entity_id = $2${k.where}${k.tail}`,
    [organizationId, id, ...k.values]);
}
