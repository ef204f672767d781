import { createHash } from 'node:crypto';
import type { Config } from '../../config.ts';
import type { QueueRegistry } from '../../queues/registry.ts';
import type { Db, Tx, WithinTx } from '../../db.ts';
import { DomainError, notFound, validationError, stateConflict } from '../../errors.ts';
import { findRegistration } from '../enterprise/registrations.ts';
import { brandReviewProvider } from './review.ts';

// The Display Identity Record (Branded Calling): one per organization.
//   draft --PUT--> draft --submit (needs an APPROVED enterprise)--> submitted --review--> approved
// then each network (ATT, TMOBILE, VERIZON) rolls the display out on its own: pending -> live. A PUT on an approved
// DIR makes it a draft again (a change needs a new review); a PUT or submit while submitted is a 409.

export const NETWORKS = ['ATT', 'TMOBILE', 'VERIZON'] as const;
export type Network = (typeof NETWORKS)[number];
export const DIR_STATUSES = ['draft', 'submitted', 'approved'] as const;
export type DirStatus = (typeof DIR_STATUSES)[number];
export const DISPLAY_NAME_MAX = 64;
export const CALL_REASON_MAX = 120;

/** putBrand writes the logo's columns in one UPDATE: all null without a logo, all set with one. */
type LogoColumns = { logo_sha256: null; logo_size: null; logo_side: null } | { logo_sha256: string; logo_size: number; logo_side: number };

export type BrandRow = LogoColumns & {
  organization_id: string;
  status: DirStatus;
  display_name: string | null;
  call_reason: string | null;
  enterprise_id: string | null;
  networks: Partial<Record<Network, { status: 'pending' | 'live'; updated_at: string }>>;
  review_provider: string | null;
  review_round: number;
  submitted_at: Date | null;
  approved_at: Date | null;
  created_at: Date;
  updated_at: Date;
};

export interface BrandInput {
  display_name?: string;
  call_reason?: string;
  /** A re-encoded PNG and its side in px, or null to remove the logo. */
  logo?: { png: Buffer; side: number } | null;
}

const COLUMNS = `organization_id, status, display_name, call_reason, logo_sha256, logo_size, logo_side, enterprise_id, networks,
  review_provider, review_round, submitted_at, approved_at, created_at, updated_at`;

const CORPORATE_SUFFIX = / (?:l ?l ?c|p ?l ?l ?c|l ?l ?p|l ?p|inc|incorporated|corp|corporation|co|company|ltd|limited|p ?c|plc)$/;
const normalized = (s: string) => s.toLowerCase().replace(/[.,]/g, ' ').replace(/\s+/g, ' ').trim();

/** The display name may be the approved legal name, compared without case, periods, commas and extra spaces, and
 *  with or without its corporate suffix (LLC, Inc., Corp., Co., Ltd., LP, LLP, PLLC, PC, PLC; never another one):
 *  for "Acme Dental Group, LLC" both "Acme Dental Group LLC" and "ACME DENTAL GROUP" are accepted. */
export function displayNameMatches(displayName: string, legalName: string): boolean {
  const d = splitSuffix(displayName);
  const l = splitSuffix(legalName);
  const whole = normalized(displayName);
  return whole === normalized(legalName) || whole === l.base || (d.base === l.base && d.suffix === l.suffix);
}

function splitSuffix(name: string): { base: string; suffix: string } {
  const n = normalized(name);
  const base = n.replace(CORPORATE_SUFFIX, '');
  return { base, suffix: n.slice(base.length).replace(/ /g, '') };
}

const nameProblem = (legal: string) => `must be the approved legal business name "${legal}" (case, periods, commas and the corporate suffix may differ)`;

export async function findBrand(q: Db | Tx, organizationId: string, lock = false): Promise<BrandRow | null> {
  return q.oneOrNone(`SELECT ${COLUMNS} FROM brand_identities WHERE organization_id = $1${lock ? ' FOR UPDATE' : ''}`, [organizationId]);
}

export async function getBrand(q: Db | Tx, organizationId: string): Promise<BrandRow> {
  const row = await findBrand(q, organizationId);
  if (!row) throw notFound('A Display Identity Record of this organization (PUT /v1/caller-trust/brand creates it)');
  return row;
}

const statusConflict = (row: BrandRow, what: string) => stateConflict('brand', row.status,
  `The Display Identity Record is ${row.status}; ${what}.`, { resolutionHint: `Current status: ${row.status}.` });

/** PUT: creates the draft or changes the fields given. */
export async function putBrand(db: Db, organizationId: string, input: BrandInput, within?: WithinTx<BrandRow>): Promise<BrandRow> {
  return db.tx(async (tx) => {
    // One row per organization: take the row lock (creating the row first if needed) so PUTs and submits serialize.
    await tx.none('INSERT INTO brand_identities (organization_id) VALUES ($1) ON CONFLICT DO NOTHING', [organizationId]);
    const cur = (await findBrand(tx, organizationId, true))!;
    if (cur.status === 'submitted') throw statusConflict(cur, 'it cannot change while it is under review');
    if (input.display_name !== undefined) {
      const ent = await findRegistration(tx, organizationId, null);
      if (ent?.status === 'APPROVED' && !displayNameMatches(input.display_name, ent.legal_name)) {
        throw validationError({ display_name: nameProblem(ent.legal_name) });
      }
    }
    const logo = input.logo;
    await tx.none(`UPDATE brand_identities SET status = 'draft', display_name = COALESCE($2, display_name),
        call_reason = COALESCE($3, call_reason),
        logo_png = CASE WHEN $4 THEN $5 ELSE logo_png END, logo_sha256 = CASE WHEN $4 THEN $6 ELSE logo_sha256 END,
        logo_size = CASE WHEN $4 THEN $7 ELSE logo_size END, logo_side = CASE WHEN $4 THEN $8 ELSE logo_side END,
        networks = CASE WHEN status = 'approved' THEN '{}' ELSE networks END,
        approved_at = CASE WHEN status = 'approved' THEN NULL ELSE approved_at END, updated_at = now()
      WHERE organization_id = $1`,
    [organizationId, input.display_name?.trim() ?? null, input.call_reason?.trim() ?? null, logo !== undefined,
      logo?.png ?? null, logo ? createHash('sha256').update(logo.png).digest('hex') : null, logo?.png.length ?? null, logo?.side ?? null]);
    const row = (await findBrand(tx, organizationId))!;
    await within?.(tx, row);
    return row;
  });
}

export interface ReviewDeps { db: Db; queues: QueueRegistry; config: Pick<Config, 'sandboxTimeScale'> }

/** submit: a complete draft, checked against the organization's APPROVED enterprise registration, goes to review. */
export async function submitBrand(deps: ReviewDeps, organizationId: string, within?: WithinTx<BrandRow>): Promise<BrandRow> {
  const provider = brandReviewProvider(deps.queues, deps.config);
  const row = await deps.db.tx(async (tx) => {
    const cur = await findBrand(tx, organizationId, true);
    if (!cur) throw notFound('A Display Identity Record of this organization (PUT /v1/caller-trust/brand creates it)');
    if (cur.status !== 'draft') throw statusConflict(cur, 'only a draft can be submitted');
    const ent = await findRegistration(tx, organizationId, null);
    if (ent?.status !== 'APPROVED') {
      throw new DomainError('enterprise_not_approved', ent
        ? `Branded Calling needs an APPROVED enterprise registration; the primary registration ${ent.id} is ${ent.status}.`
        : 'Branded Calling needs an APPROVED enterprise registration; this organization has none.');
    }
    const fields: Record<string, string> = {};
    if (!cur.display_name) fields.display_name = 'is required before submitting';
    else if (!displayNameMatches(cur.display_name, ent.legal_name)) fields.display_name = nameProblem(ent.legal_name);
    if (!cur.call_reason) fields.call_reason = 'is required before submitting';
    if (!cur.logo_sha256) fields.logo = 'is required before submitting';
    if (Object.keys(fields).length) throw validationError(fields, 'The Display Identity Record is incomplete; see fields.');
    const pending = Object.fromEntries(NETWORKS.map((n) => [n, { status: 'pending', updated_at: new Date().toISOString() }]));
    await tx.none(`UPDATE brand_identities SET status = 'submitted', enterprise_id = $2, networks = $3:json, review_provider = $4,
        review_round = review_round + 1, submitted_at = now(), approved_at = NULL, updated_at = now() WHERE organization_id = $1`,
    [organizationId, ent.id, pending, provider.name]);
    const next = (await findBrand(tx, organizationId))!;
    await within?.(tx, next);
    return next;
  });
  await provider.submit({ organizationId, round: row.review_round });
  return row;
}

/** The review of one round approved the DIR. Answers the row while it is approved in that round (also when a
 *  retried job finds it approved already, so the rollout still gets scheduled), else null (changed meanwhile). */
export async function approveBrand(db: Db, organizationId: string, round: number): Promise<BrandRow | null> {
  await db.none(`UPDATE brand_identities SET status = 'approved', approved_at = now(), updated_at = now()
    WHERE organization_id = $1 AND status = 'submitted' AND review_round = $2`, [organizationId, round]);
  const row = await findBrand(db, organizationId);
  return row?.status === 'approved' && row.review_round === round ? row : null;
}

/** One network shows the approved display of that round from now on. */
export async function markNetworkLive(db: Db, organizationId: string, round: number, network: Network): Promise<boolean> {
  const n = await db.result(`UPDATE brand_identities SET networks = jsonb_set(networks, $3, jsonb_build_object('status', 'live',
      'updated_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')), true), updated_at = now()
    WHERE organization_id = $1 AND status = 'approved' AND review_round = $2`, [organizationId, round, `{${network}}`]);
  return n.rowCount > 0;
}

/** The stored logo (our PNG re-encoding). */
export async function brandLogo(db: Db, organizationId: string): Promise<{ png: Buffer; sha256: string }> {
  const r = await db.oneOrNone<{ png: Buffer; sha256: string }>(
    'SELECT logo_png AS png, logo_sha256 AS sha256 FROM brand_identities WHERE organization_id = $1 AND logo_png IS NOT NULL', [organizationId]);
  if (!r) throw notFound('The Display Identity Record\'s logo');
  return r;
}

/** DIRs of the sandbox reviewer still submitted, or approved but not live everywhere, longer than olderThanMs after
 *  their last step: their job may have been lost. */
export async function staleSandboxReviews(db: Db, olderThanMs: number): Promise<Pick<BrandRow, 'organization_id' | 'status' | 'review_round' | 'networks'>[]> {
  return db.any(`SELECT organization_id, status, review_round, networks FROM brand_identities WHERE review_provider = 'sandbox'
    AND ((status = 'submitted' AND submitted_at < now() - $1 * interval '1 millisecond')
      OR (status = 'approved' AND approved_at < now() - $1 * interval '1 millisecond'
          AND EXISTS (SELECT 1 FROM jsonb_each(networks) n WHERE n.value->>'status' <> 'live'))) LIMIT 500`, [olderThanMs]);
}
