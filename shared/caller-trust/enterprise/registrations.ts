import type { Config } from '../../config.ts';
import type { QueueRegistry } from '../../queues/registry.ts';
import type { Db, Tx, WithinTx } from '../../db.ts';
import { DomainError, notFound, stateConflict } from '../../errors.ts';
import { recordEvent, wakeRelay } from '../../events/outbox.ts';
import { isUuid, uuidv7 } from '../../ids.ts';
import { assertBusinessDetails, type BusinessDetails } from './details.ts';
import { renderSignedLoa, renderUnsignedLoa, sha256Hex, type LetterParty, type SignatureInput, type SignedBy } from './loa-pdf.ts';
import { vettingProvider, type VettingDecision } from './vetting.ts';

// Enterprise registrations and their one state machine:
//   DRAFT -> PENDING_VETTING (sign-and-submit, submit) -> APPROVED | REJECTED (the vetting provider, or an operator)
//   REJECTED -> PENDING_VETTING (resign, or submit of a newly signed LOA)
// Every move locks the row, checks the move against MOVES and answers state_conflict naming the
// current status otherwise. Each status change writes enterprise.status.updated to the outbox in its transaction.

export const STATUSES = ['DRAFT', 'PENDING_VETTING', 'APPROVED', 'REJECTED'] as const;
export type EnterpriseStatus = (typeof STATUSES)[number];
export const STATUS_EVENT = 'enterprise.status.updated';

/** Which statuses each move starts from. */
export const MOVES = {
  edit: ['DRAFT'],
  delete: ['DRAFT', 'REJECTED'],
  generate_loa: ['DRAFT', 'REJECTED'],
  sign_and_submit: ['DRAFT'],
  submit: ['DRAFT', 'REJECTED'],
  resign: ['REJECTED'],
  decide: ['PENDING_VETTING'],
} satisfies Record<string, EnterpriseStatus[]>;
export type Move = keyof typeof MOVES;

const MOVE_WORDS: Record<Move, string> = {
  edit: 'be edited', delete: 'be deleted', generate_loa: 'have an LOA generated', sign_and_submit: 'be signed and submitted',
  submit: 'be submitted', resign: 'be re-signed', decide: 'be decided',
};

export interface RegistrationRow extends BusinessDetails {
  id: string;
  organization_id: string;
  status: EnterpriseStatus;
  rejection_reasons: string[];
  vetting_provider: string | null;
  vetting_round: number;
  signature_method: 'in_app' | 'uploaded' | null;
  submitted_at: Date | null;
  decided_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** The stored LOA versions (filled by the reads of this module). */
  loas?: Partial<Record<LoaVersion, { sha256: string; created_at: string; size: number }>> | null;
  /** The documents attached to it (POST /v1/documents with registration_id; filled by the reads of this module). */
  documents?: { id: string; name: string; content_type: string; size_bytes: number }[] | null;
}

export type LoaVersion = 'unsigned' | 'signed';

/** What moving into vetting needs besides the database: the provider's queue. */
export interface VettingDeps { db: Db; queues: QueueRegistry; config: Pick<Config, 'sandboxTimeScale'> }
/** What generating a letter needs: who it authorizes (PLATFORM_LEGAL_NAME, PLATFORM_LEGAL_ADDRESS). */
export interface LetterDeps { db: Db; config: Pick<Config, 'platformLegal'> }

/** Who the letter authorizes. Without it the platform issues no letter (503 naming the settings) rather than a letter
 *  that names nobody, or a placeholder a business might sign. */
export function letterProvider(config: Pick<Config, 'platformLegal'>): LetterParty {
  if (config.platformLegal) return config.platformLegal;
  throw new DomainError('service_unavailable', 'This platform cannot issue a Letter of Authorization: its operator has not set '
    + 'PLATFORM_LEGAL_NAME and PLATFORM_LEGAL_ADDRESS, the legal name and address of the party the letter authorizes.',
  { resolutionHint: 'The platform operator sets PLATFORM_LEGAL_NAME and PLATFORM_LEGAL_ADDRESS and restarts the gateway.' });
}

export function assertMove(row: Pick<RegistrationRow, 'id' | 'status'>, move: Move): void {
  const from: readonly EnterpriseStatus[] = MOVES[move];
  if (!from.includes(row.status)) {
    throw stateConflict('enterprise_registration', row.status,
      `Enterprise registration ${row.id} is ${row.status}; only a registration that is ${from.join(' or ')} can ${MOVE_WORDS[move]}.`,
      { resolutionHint: `Current status: ${row.status}.` });
  }
}

const SELECT = `SELECT r.*, (SELECT jsonb_object_agg(l.version, jsonb_build_object('sha256', l.sha256, 'created_at', l.created_at,
  'size', octet_length(l.pdf))) FROM enterprise_loas l WHERE l.registration_id = r.id) AS loas,
  (SELECT coalesce(jsonb_agg(jsonb_build_object('id', d.id, 'name', d.name, 'content_type', d.content_type, 'size_bytes', d.size_bytes)
    ORDER BY d.id), '[]'::jsonb) FROM documents d WHERE d.registration_id = r.id) AS documents FROM enterprise_registrations r`;

/** The registration by id, or (id null) the organization's primary registration: its APPROVED one, else its newest. */
export async function findRegistration(q: Db | Tx, organizationId: string, id: string | null, lock = false): Promise<RegistrationRow | null> {
  if (id !== null && !isUuid(id)) return null;
  const forUpdate = lock ? ' FOR UPDATE OF r' : '';
  return id === null
    ? q.oneOrNone(`${SELECT} WHERE r.organization_id = $1 AND r.deleted_at IS NULL
        ORDER BY (r.status = 'APPROVED') DESC, r.id DESC LIMIT 1${forUpdate}`, [organizationId])
    : q.oneOrNone(`${SELECT} WHERE r.id = $1 AND r.organization_id = $2 AND r.deleted_at IS NULL${forUpdate}`, [id, organizationId]);
}

export async function getRegistration(q: Db | Tx, organizationId: string, id: string | null, lock = false): Promise<RegistrationRow> {
  const row = await findRegistration(q, organizationId, id, lock);
  if (!row) throw notFound(id === null ? 'An enterprise registration of this organization' : `Enterprise registration ${id}`);
  return row;
}

export async function createRegistration(db: Db, organizationId: string, d: BusinessDetails, within?: WithinTx<RegistrationRow>): Promise<RegistrationRow> {
  await assertBusinessDetails(db, organizationId, d);
  return db.tx(async (tx) => {
    const id = uuidv7();
    await tx.none(`INSERT INTO enterprise_registrations (id, organization_id, legal_name, ein, business_type, industry, website,
        registered_address, authorized_contact, phone_numbers)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8:json, $9:json, $10)`,
    [id, organizationId, d.legal_name.trim(), d.ein, d.business_type, d.industry, d.website, d.registered_address,
      d.authorized_contact, d.phone_numbers]);
    const row = await getRegistration(tx, organizationId, id);
    await within?.(tx, row);
    return row;
  });
}

/** Runs a move on the locked row; the row's business details may be checked again inside (numbers still held). */
async function move<T>(db: Db, organizationId: string, id: string | null, m: Move,
  fn: (tx: Tx, row: RegistrationRow) => Promise<T>, within?: WithinTx<T>): Promise<T> {
  return db.tx(async (tx) => {
    const row = await getRegistration(tx, organizationId, id, true);
    assertMove(row, m);
    const out = await fn(tx, row);
    await within?.(tx, out);
    return out;
  });
}

/** PATCH: changes the given business details of a DRAFT; its generated (unsigned) LOA no longer matches and is dropped. */
export async function updateRegistration(db: Db, organizationId: string, id: string, patch: Partial<BusinessDetails>,
  within?: WithinTx<RegistrationRow>): Promise<RegistrationRow> {
  await assertBusinessDetails(db, organizationId, patch);
  return move(db, organizationId, id, 'edit', async (tx, row) => {
    await applyDetails(tx, row.id, patch);
    return getRegistration(tx, organizationId, row.id);
  }, within);
}

async function applyDetails(tx: Tx, id: string, p: Partial<BusinessDetails>): Promise<void> {
  await tx.none(`UPDATE enterprise_registrations SET legal_name = COALESCE($2, legal_name), ein = COALESCE($3, ein),
      business_type = COALESCE($4, business_type), industry = COALESCE($5, industry), website = COALESCE($6, website),
      registered_address = COALESCE($7::jsonb, registered_address), authorized_contact = COALESCE($8::jsonb, authorized_contact),
      phone_numbers = COALESCE($9, phone_numbers), updated_at = now() WHERE id = $1`,
  [id, p.legal_name?.trim() ?? null, p.ein ?? null, p.business_type ?? null, p.industry ?? null, p.website ?? null,
    p.registered_address ? JSON.stringify(p.registered_address) : null,
    p.authorized_contact ? JSON.stringify(p.authorized_contact) : null, p.phone_numbers ?? null]);
  await tx.none(`DELETE FROM enterprise_loas WHERE registration_id = $1 AND version = 'unsigned'`, [id]);
}

/** DELETE: a DRAFT or REJECTED registration disappears from the API (the row and its LOAs stay as history). */
export async function deleteRegistration(db: Db, organizationId: string, id: string, within?: WithinTx<void>): Promise<void> {
  await move(db, organizationId, id, 'delete', async (tx, row) => {
    await tx.none('UPDATE enterprise_registrations SET deleted_at = now(), updated_at = now() WHERE id = $1', [row.id]);
  }, within);
}

async function storeLoa(tx: Tx, id: string, version: LoaVersion, pdf: Uint8Array, audit: unknown): Promise<void> {
  await tx.none(`INSERT INTO enterprise_loas (registration_id, version, pdf, sha256, audit) VALUES ($1, $2, $3, $4, $5:json)
    ON CONFLICT (registration_id, version) DO UPDATE SET pdf = EXCLUDED.pdf, sha256 = EXCLUDED.sha256, audit = EXCLUDED.audit,
      created_at = now()`, [id, version, Buffer.from(pdf), sha256Hex(pdf), audit ?? null]);
}

/** The unsigned LOA of the row's current details: the stored one (PATCH drops it when details change), else a new one. */
async function unsignedLoa(tx: Tx, row: RegistrationRow, provider: LetterParty, fresh: boolean): Promise<Uint8Array> {
  if (!fresh) {
    const have = await tx.oneOrNone<{ pdf: Buffer }>(`SELECT pdf FROM enterprise_loas WHERE registration_id = $1 AND version = 'unsigned'`, [row.id]);
    if (have) return have.pdf;
  }
  const pdf = await renderUnsignedLoa(row.id, row, provider, new Date());
  await storeLoa(tx, row.id, 'unsigned', pdf, null);
  return pdf;
}

/** generate-loa: (re)generates the unsigned LOA for hand signing. */
export async function generateLoa(deps: LetterDeps, organizationId: string, id: string | null, within?: WithinTx<RegistrationRow>): Promise<RegistrationRow> {
  const provider = letterProvider(deps.config);
  return move(deps.db, organizationId, id, 'generate_loa', async (tx, row) => {
    await unsignedLoa(tx, row, provider, true);
    return getRegistration(tx, organizationId, row.id);
  }, within);
}

/** A signing request as the gateway hands it over: who signs, how, from where, and with which credential. */
export type Signing = Omit<SignatureInput, 'registrationId' | 'signedAt' | 'signedBy'>
  & { signedBy: Pick<SignedBy, 'credential' | 'keyId' | 'userId'> };

/** The signing credential as the audit trail shows it: the key's display prefix and its user's email. */
async function signedBy(tx: Tx, by: Signing['signedBy']): Promise<SignedBy> {
  // A console session has no key: its prefix reads "session".
  const k = by.credential === 'session'
    ? await tx.oneOrNone<{ display_prefix: string; email: string | null }>(`SELECT 'session' AS display_prefix, email FROM users WHERE id = $1`, [by.userId])
    : await tx.oneOrNone<{ display_prefix: string; email: string | null }>(`SELECT k.display_prefix, u.email FROM api_keys k
    LEFT JOIN users u ON u.id = $2 WHERE k.id = $1`, [by.keyId, by.userId]);
  return { ...by, keyPrefix: k?.display_prefix ?? 'unknown', userEmail: k?.email ?? null };
}

/** Moves the locked row into vetting (a new round) and records the event. */
async function intoVetting(tx: Tx, row: RegistrationRow, provider: string, method: 'in_app' | 'uploaded'): Promise<RegistrationRow> {
  await tx.none(`UPDATE enterprise_registrations SET status = 'PENDING_VETTING', vetting_round = vetting_round + 1,
      vetting_provider = $2, signature_method = $3, rejection_reasons = '{}', submitted_at = now(), decided_at = NULL,
      updated_at = now() WHERE id = $1`, [row.id, provider, method]);
  const next = await getRegistration(tx, row.organization_id, row.id);
  await recordStatusEvent(tx, next, row.status);
  return next;
}

async function recordStatusEvent(tx: Tx, row: RegistrationRow, previous: EnterpriseStatus): Promise<void> {
  await recordEvent(tx, {
    organizationId: row.organization_id, eventType: STATUS_EVENT,
    data: { id: row.id, status: row.status, previous_status: previous, reasons: row.rejection_reasons, occurred_at: row.updated_at.toISOString() },
  });
}

/** After a commit that moved a registration into vetting: wake the outbox and hand it to the provider. */
async function afterSubmit(deps: VettingDeps, row: RegistrationRow): Promise<void> {
  wakeRelay(deps.db);
  await handToProvider(deps, row);
}

/** Hands the registration's current round to the vetting provider (the sandbox's job id is per round, so handing
 *  the same round twice vets it once). */
export async function handToProvider(deps: VettingDeps, row: Pick<RegistrationRow, 'id' | 'organization_id' | 'vetting_round' | 'ein' | 'legal_name'>): Promise<void> {
  await vettingProvider(deps.queues, deps.config).submit({
    registrationId: row.id, organizationId: row.organization_id, round: row.vetting_round, ein: row.ein, legalName: row.legal_name,
  });
}

/** Registrations in sandbox vetting for longer than olderThanMs: their hand-off may have been lost. */
export async function staleSandboxVetting(db: Db, olderThanMs: number): Promise<RegistrationRow[]> {
  return db.any(`SELECT * FROM enterprise_registrations WHERE status = 'PENDING_VETTING' AND vetting_provider = 'sandbox'
    AND deleted_at IS NULL AND submitted_at < now() - $1 * interval '1 millisecond' LIMIT 500`, [olderThanMs]);
}

/** sign-and-submit (DRAFT) and resign (REJECTED, optionally with corrected details): sign the LOA of the current
 *  details in the app and go into vetting. */
export async function signAndSubmit(deps: VettingDeps & LetterDeps, organizationId: string, id: string | null, m: 'sign_and_submit' | 'resign',
  signing: Signing, changes: Partial<BusinessDetails> | undefined, within?: WithinTx<RegistrationRow>): Promise<RegistrationRow> {
  if (changes) await assertBusinessDetails(deps.db, organizationId, changes);
  const letter = letterProvider(deps.config);
  const provider = vettingProvider(deps.queues, deps.config).name;
  const row = await move(deps.db, organizationId, id, m, async (tx, locked) => {
    let current = locked;
    if (changes && Object.keys(changes).length) {
      await applyDetails(tx, locked.id, changes);
      current = await getRegistration(tx, organizationId, locked.id);
    }
    // A resign always signs a newly generated letter; a first signature signs the letter the client generated, if any.
    const unsigned = await unsignedLoa(tx, current, letter, m === 'resign');
    const signed = await renderSignedLoa(unsigned, { ...signing, signedBy: await signedBy(tx, signing.signedBy),
      registrationId: current.id, signedAt: new Date() });
    await storeLoa(tx, current.id, 'signed', signed.pdf, signed.audit);
    return intoVetting(tx, current, provider, 'in_app');
  }, within);
  await afterSubmit(deps, row);
  return row;
}

/** submit: an LOA signed out of band (already checked to be a PDF) becomes the signed LOA; into vetting. */
export async function submitSignedLoa(deps: VettingDeps, organizationId: string, id: string | null, pdf: Buffer,
  meta: { clientAddress: string; forwardedFor: string | null; signedBy: Signing['signedBy'] }, within?: WithinTx<RegistrationRow>): Promise<RegistrationRow> {
  const provider = vettingProvider(deps.queues, deps.config).name;
  const row = await move(deps.db, organizationId, id, 'submit', async (tx, locked) => {
    await storeLoa(tx, locked.id, 'signed', pdf, {
      uploaded_at: new Date().toISOString(), client_address: meta.clientAddress, forwarded_for: meta.forwardedFor,
      credential: meta.signedBy.credential, key_id: meta.signedBy.keyId, user_id: meta.signedBy.userId,
    });
    return intoVetting(tx, locked, provider, 'uploaded');
  }, within);
  await afterSubmit(deps, row);
  return row;
}

/** A vetting decision for one round of a registration (the provider's, or an operator's with round null). Returns
 *  the decided row, or null when the registration is no longer pending in that round (decided already). APPROVED
 *  also marks the organization as having its own brand enterprise (the account snapshot shows it). */
export async function decideVetting(db: Db, id: string, round: number | null, d: VettingDecision): Promise<RegistrationRow | null> {
  if (!isUuid(id)) return null;
  const row = await db.tx(async (tx) => {
    const cur = await tx.oneOrNone<RegistrationRow>('SELECT * FROM enterprise_registrations WHERE id = $1 AND deleted_at IS NULL FOR UPDATE', [id]);
    if (!cur || cur.status !== 'PENDING_VETTING' || (round !== null && cur.vetting_round !== round)) return null;
    await tx.none(`UPDATE enterprise_registrations SET status = $2, rejection_reasons = $3, decided_at = now(), updated_at = now()
      WHERE id = $1`, [id, d.status, d.status === 'REJECTED' ? d.reasons : []]);
    if (d.status === 'APPROVED') await tx.none('UPDATE organizations SET own_brand_enterprise = true WHERE id = $1', [cur.organization_id]);
    const next = await getRegistration(tx, cur.organization_id, id);
    await recordStatusEvent(tx, next, cur.status);
    return next;
  });
  if (row) wakeRelay(db);
  return row;
}

/** The stored LOA: the requested version, or (none asked) the signed one when there is one, else the unsigned one. */
export async function loaDocument(db: Db, organizationId: string, id: string | null, version: LoaVersion | undefined):
  Promise<{ pdf: Buffer; version: LoaVersion; registrationId: string }> {
  const row = await getRegistration(db, organizationId, id);
  const doc = await db.oneOrNone<{ pdf: Buffer; version: LoaVersion }>(`SELECT pdf, version FROM enterprise_loas
    WHERE registration_id = $1 AND ($2::text IS NULL OR version = $2) ORDER BY version = 'signed' DESC LIMIT 1`, [row.id, version ?? null]);
  if (!doc) {
    throw new DomainError('not_found', version
      ? `Enterprise registration ${row.id} has no ${version} LOA yet.`
      : `Enterprise registration ${row.id} has no LOA yet; POST .../generate-loa makes one.`);
  }
  return { ...doc, registrationId: row.id };
}
