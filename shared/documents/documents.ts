// Documents an organization keeps with the platform: supporting documents of enterprise registrations and knowledge
// documents of voice agents. Each purpose is governed by its area's scopes (PURPOSE_SCOPES); the bytes are checked
// from themselves (detect.ts) and kept in the document storage (storage.ts), the metadata in `documents`.
//
// Write order: the file first (atomic: temp file + rename), then the row; a failed insert removes the file. Delete:
// the row first, then the file. A crash between the two steps leaves an orphan file (no row), which sweepOrphans
// removes; never a visible document without its bytes.
import { createHash } from 'node:crypto';
import type { Db, Tx, WithinTx } from '../db.ts';
import { writeWithin } from '../db.ts';
import { DomainError, notFound, stateConflict, validationError } from '../errors.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import type { Scope } from '../scopes.ts';
import { assertDocumentContent } from '../sub-entities/content-policy.ts';
import { assertSubEntityOf } from '../sub-entities/sub-entities.ts';
import { detectDocumentType, type DocumentType } from './detect.ts';
import type { DocumentStorage, StoredFile } from './storage.ts';

export const PURPOSES = ['enterprise_registration', 'agent_knowledge'] as const;
export type Purpose = (typeof PURPOSES)[number];

/** The scopes that read and write each purpose's documents. */
export const PURPOSE_SCOPES: Record<Purpose, { read: Scope; write: Scope }> = {
  enterprise_registration: { read: 'caller_trust:read', write: 'caller_trust:write' },
  agent_knowledge: { read: 'agents:read', write: 'agents:write' },
};
export const READ_SCOPES: Scope[] = PURPOSES.map((p) => PURPOSE_SCOPES[p].read);
export const WRITE_SCOPES: Scope[] = PURPOSES.map((p) => PURPOSE_SCOPES[p].write);

/** Registration statuses under which its attached documents are part of a submission and cannot be deleted. */
const SUBMITTED: readonly string[] = ['PENDING_VETTING', 'APPROVED'];

export const NAME_MAX = 200;

export interface DocumentRow {
  id: string;
  organization_id: string;
  purpose: Purpose;
  name: string;
  content_type: DocumentType;
  size_bytes: string | number;
  sha256: string;
  registration_id: string | null;
  agent_id: string | null;
  /** The sub-entity it belongs to (null: the organization's); its HIPAA mode withholds the content. */
  sub_entity_id: string | null;
  created_at: Date;
}

/** Whether the credential may see a document of that sub-entity (shared/sub-entities/limit.ts `within`, bound to the
 *  principal by the route); by default every document of the organization. */
export type SeesSubEntity = (subEntityId: string | null) => boolean;
const ALL: SeesSubEntity = () => true;

export interface DocumentDeps { db: Db; storage: DocumentStorage; config: { documentsMaxBytes: number } }

/** The purposes whose documents these scopes may read (list filter). */
export const readablePurposes = (scopes: ReadonlySet<Scope>): Purpose[] => PURPOSES.filter((p) => scopes.has(PURPOSE_SCOPES[p].read));

/** scope_missing naming the scope the purpose needs for this access. */
export function assertPurposeScope(scopes: ReadonlySet<Scope>, purpose: Purpose, access: 'read' | 'write'): void {
  const scope = PURPOSE_SCOPES[purpose][access];
  if (scopes.has(scope)) return;
  throw new DomainError('scope_missing', `This credential lacks the "${scope}" scope required for ${purpose} documents.`,
    { fields: { scope: `requires ${scope}` }, resolutionHint: `Create a key that includes the ${scope} scope.` });
}

export interface NewDocument {
  purpose?: Purpose;
  name?: string;
  registration_id?: string;
  agent_id?: string;
  /** The sub-entity it belongs to (one of the organization's, else validation_error); null or omitted: none. */
  sub_entity_id?: string | null;
  bytes: Buffer;
  /** The uploaded file's name (multipart), used as the name when none is given. */
  filename?: string;
}

/** Which purpose an upload is for: the one given, else the attachment's, else the one purpose the key may write. */
function purposeOf(input: NewDocument, scopes: ReadonlySet<Scope>): Purpose {
  if (input.purpose) return input.purpose;
  if (input.registration_id) return 'enterprise_registration';
  if (input.agent_id) return 'agent_knowledge';
  const writable = PURPOSES.filter((p) => scopes.has(PURPOSE_SCOPES[p].write));
  if (writable.length === 1) return writable[0];
  throw validationError({ purpose: `is required (one of ${PURPOSES.join(', ')})` });
}

/** A display name: trimmed, without control characters or path separators, at most NAME_MAX characters. */
function cleanName(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  // eslint-disable-next-line no-control-regex
  const s = raw.replace(/[\u0000-\u001f\u007f]/g, '').replace(/^.*[\\/]/, '').trim();
  return s ? s.slice(0, NAME_MAX) : null;
}

/** Stores a document: checks scope, size, type and attachments, writes the file, then the row (see the top). */
export async function createDocument(deps: DocumentDeps, organizationId: string, scopes: ReadonlySet<Scope>, input: NewDocument,
  within?: WithinTx<DocumentRow>, sees: SeesSubEntity = ALL): Promise<DocumentRow> {
  const purpose = purposeOf(input, scopes);
  assertPurposeScope(scopes, purpose, 'write');
  const max = deps.config.documentsMaxBytes;
  if (input.bytes.length > max) throw validationError({ file: `exceeds the ${max} byte limit (it is ${input.bytes.length} bytes)` }, 'The document is too large.');
  if (input.registration_id && purpose !== 'enterprise_registration') {
    throw validationError({ registration_id: 'is only for purpose enterprise_registration' });
  }
  if (input.agent_id && purpose !== 'agent_knowledge') throw validationError({ agent_id: 'is only for purpose agent_knowledge' });
  const detected = await detectDocumentType(input.bytes);
  if (!detected.ok) throw validationError({ file: detected.reason }, 'The file is not an accepted document type.');
  if (input.registration_id) {
    const reg = isUuid(input.registration_id) ? await deps.db.oneOrNone(`SELECT 1 FROM enterprise_registrations
      WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL`, [input.registration_id, organizationId]) : null;
    if (!reg) throw validationError({ registration_id: 'is not an enterprise registration of this organization' });
  }
  if (input.agent_id) {
    const agent = isUuid(input.agent_id) ? await deps.db.oneOrNone<{ sub_entity_id: string | null }>(
      'SELECT sub_entity_id FROM agents WHERE id = $1 AND organization_id = $2', [input.agent_id, organizationId]) : null;
    if (!agent || !sees(agent.sub_entity_id)) throw validationError({ agent_id: 'is not an agent of this organization' });
  }
  await assertSubEntityOf(deps.db, organizationId, input.sub_entity_id);
  const id = uuidv7();
  const name = cleanName(input.name) ?? cleanName(input.filename) ?? `document.${detected.extension}`;
  const sha256 = createHash('sha256').update(input.bytes).digest('hex');
  await deps.storage.put(id, input.bytes);
  try {
    return await writeWithin(deps.db, within, (q) => q.one<DocumentRow>(`INSERT INTO documents
        (id, organization_id, purpose, name, content_type, size_bytes, sha256, registration_id, agent_id, sub_entity_id)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
    [id, organizationId, purpose, name, detected.type, input.bytes.length, sha256, input.registration_id ?? null, input.agent_id ?? null,
      input.sub_entity_id ?? null]));
  } catch (err) {
    await deps.storage.remove(id).catch(() => undefined); // left behind, the sweep removes it
    throw err;
  }
}

/** sub_entity_id: validated (assertSubEntityFilter) and forced for a limited key (listFilter) by the route. */
export interface DocumentFilter { purpose?: Purpose; registration_id?: string; agent_id?: string; sub_entity_id?: string }

/** A page of the organization's documents among `purposes` (those the key may read). */
export async function listDocuments(db: Db, organizationId: string, purposes: Purpose[], f: DocumentFilter, p: PageParams): Promise<DocumentRow[]> {
  const allowed = f.purpose ? purposes.filter((x) => x === f.purpose) : purposes;
  if (!allowed.length) return [];
  if ((f.registration_id && !isUuid(f.registration_id)) || (f.agent_id && !isUuid(f.agent_id))) return [];
  const k = keysetClause('id', p, 6);
  return db.any(`SELECT * FROM documents WHERE organization_id = $1 AND purpose = ANY($2::text[])
      AND ($3::uuid IS NULL OR registration_id = $3) AND ($4::uuid IS NULL OR agent_id = $4)
      AND ($5::uuid IS NULL OR sub_entity_id = $5)${k.where}${k.tail}`,
  [organizationId, allowed, f.registration_id ?? null, f.agent_id ?? null, f.sub_entity_id ?? null, ...k.values]);
}

async function findDocument(q: Db | Tx, organizationId: string, id: string, lock = false): Promise<DocumentRow | null> {
  if (!isUuid(id)) return null;
  return q.oneOrNone(`SELECT * FROM documents WHERE id = $1 AND organization_id = $2${lock ? ' FOR UPDATE' : ''}`, [id, organizationId]);
}

/** The document (not_found for another organization's, and for one of a sub-entity the credential may not see:
 *  before the scope check, so nothing leaks), if the scopes may read its purpose. */
export async function getDocument(db: Db, organizationId: string, scopes: ReadonlySet<Scope>, id: string,
  sees: SeesSubEntity = ALL): Promise<DocumentRow> {
  const row = await findDocument(db, organizationId, id);
  if (!row || !sees(row.sub_entity_id)) throw notFound(`Document ${id}`);
  assertPurposeScope(scopes, row.purpose, 'read');
  return row;
}

/** The document and its stored file; content_policy_forbidden while its sub-entity is in HIPAA mode. */
export async function documentContent(deps: Pick<DocumentDeps, 'db' | 'storage'>, organizationId: string, scopes: ReadonlySet<Scope>,
  id: string, sees: SeesSubEntity = ALL): Promise<{ row: DocumentRow; file: StoredFile }> {
  const row = await getDocument(deps.db, organizationId, scopes, id, sees);
  await assertDocumentContent(deps.db, organizationId, row);
  const file = await deps.storage.file(row.id);
  // A row without its file cannot come from our write order; it means the storage lost it.
  if (!file) throw new DomainError('internal_error', `The bytes of document ${id} are missing from the document storage.`);
  return { row, file };
}

/** Deletes the row, then the file. A document attached to a registration in vetting or approved stays (state_conflict). */
export async function deleteDocument(deps: Pick<DocumentDeps, 'db' | 'storage'>, organizationId: string, scopes: ReadonlySet<Scope>,
  id: string, within?: WithinTx<void>, sees: SeesSubEntity = ALL): Promise<void> {
  const existing = await findDocument(deps.db, organizationId, id);
  if (!existing || !sees(existing.sub_entity_id)) throw notFound(`Document ${id}`);
  assertPurposeScope(scopes, existing.purpose, 'write');
  await deps.db.tx(async (tx) => {
    const row = await findDocument(tx, organizationId, id, true);
    if (!row) throw notFound(`Document ${id}`);
    if (row.registration_id) {
      const reg = await tx.oneOrNone<{ status: string }>('SELECT status FROM enterprise_registrations WHERE id = $1 FOR SHARE', [row.registration_id]);
      if (reg && SUBMITTED.includes(reg.status)) {
        throw stateConflict('enterprise_registration', reg.status, `Document ${id} is attached to enterprise registration `
          + `${row.registration_id}, which is ${reg.status}: the documents of a submitted registration cannot be deleted.`);
      }
    }
    await tx.none('DELETE FROM documents WHERE id = $1', [id]);
    await within?.(tx, undefined);
  });
  await deps.storage.remove(id).catch(() => undefined); // left behind, the sweep removes it
}

/** Removes stored files without a row, and leftovers of interrupted writes, older than `graceMs` (a file younger than
 *  that may belong to an upload whose row is being written). Returns how many it removed. */
export async function sweepOrphans(db: Db, storage: DocumentStorage, graceMs: number, now = new Date()): Promise<number> {
  const before = now.getTime() - graceMs;
  const { ids, partial } = await storage.list();
  let removed = 0;
  const old = ids.filter((f) => f.modifiedAt.getTime() < before).map((f) => f.id);
  if (old.length) {
    const kept = new Set((await db.any<{ id: string }>('SELECT id FROM documents WHERE id = ANY($1::uuid[])', [old])).map((r) => r.id));
    for (const id of old) {
      if (kept.has(id)) continue;
      await storage.remove(id);
      removed++;
    }
  }
  for (const p of partial) {
    if (p.modifiedAt.getTime() >= before) continue;
    await storage.removePartial(p.name);
    removed++;
  }
  return removed;
}

/** A Content-Disposition value for a stored name: an ASCII fallback and the UTF-8 name (RFC 6266, RFC 8187). */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** Runs sweepOrphans every `everyMs` (first after one period) on a timer that does not hold the process open. Several
 *  gateways on one DOCUMENTS_DIR may each run it: removals are idempotent and checked against the rows. */
export function startOrphanSweep(db: Db, storage: DocumentStorage, log: { info(o: object, m: string): void; warn(o: object, m: string): void },
  o: { everyMs: number; graceMs: number }): { stop(): void } {
  const timer = setInterval(() => {
    sweepOrphans(db, storage, o.graceMs).then(
      (removed) => { if (removed) log.info({ removed }, 'document orphan sweep'); },
      (err) => log.warn({ err }, 'document orphan sweep failed'));
  }, o.everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
