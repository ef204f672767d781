// Organization calling limits (the guardrails' numbers), read on every dial and set by the admin CLI.
import type { Db, Tx } from '../db.ts';
import { MAX_CALL_MINUTES_CEILING } from './model.ts';

export type ContentPolicy = 'standard' | 'hipaa';

export interface OrgLimits {
  organization_id: string;
  channel_limit: number;
  calls_per_minute: number;
  daily_spend_cap_cents: number;
  allow_countries: string[];
  max_call_minutes: number;
  content_policy: ContentPolicy;
}

export type LimitsPatch = Partial<Omit<OrgLimits, 'organization_id'>>;

/** Ranges the CLI accepts (and the database enforces the same bounds). */
export const LIMIT_RANGES = {
  channel_limit: [0, 1_000_000],
  calls_per_minute: [1, 10_000_000],
  daily_spend_cap_cents: [0, 1_000_000_000_000],
  max_call_minutes: [1, MAX_CALL_MINUTES_CEILING],
} as const;

const COLUMNS = 'id AS organization_id, channel_limit, calls_per_minute, daily_spend_cap_cents, allow_countries, max_call_minutes, content_policy';

export async function getLimits(db: Db | Tx, organizationId: string): Promise<OrgLimits | null> {
  return db.oneOrNone(`SELECT ${COLUMNS} FROM organizations WHERE id = $1`, [organizationId]);
}

/** Applies the given fields (others unchanged) in one statement; null when the organization does not exist. */
export async function setLimits(db: Db | Tx, organizationId: string, p: LimitsPatch): Promise<OrgLimits | null> {
  return db.oneOrNone(
    `UPDATE organizations SET
        channel_limit = COALESCE($2, channel_limit),
        calls_per_minute = COALESCE($3, calls_per_minute),
        daily_spend_cap_cents = COALESCE($4, daily_spend_cap_cents),
        allow_countries = COALESCE($5::text[], allow_countries),
        max_call_minutes = COALESCE($6, max_call_minutes),
        content_policy = COALESCE($7, content_policy)
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [organizationId, p.channel_limit ?? null, p.calls_per_minute ?? null, p.daily_spend_cap_cents ?? null,
      p.allow_countries ?? null, p.max_call_minutes ?? null, p.content_policy ?? null],
  );
}

/** Sets (or with null clears) one held number's own call-length limit; null when no live number matches. */
export async function setNumberMaxCallMinutes(db: Db | Tx, organizationId: string, phoneNumber: string, minutes: number | null) {
  return db.oneOrNone<{ id: number; phone_number: string; max_call_minutes: number | null }>(
    `UPDATE phone_numbers SET max_call_minutes = $3
      WHERE organization_id = $1 AND phone_number = $2 AND status <> 'RELEASED'
      RETURNING id, phone_number, max_call_minutes`,
    [organizationId, phoneNumber, minutes],
  );
}

/** The call-length limit of a call from this number: the number's own limit if set, else the organization's,
 *  never above the 3-hour ceiling. */
export const effectiveMaxCallMinutes = (org: number, number: number | null) =>
  Math.min(MAX_CALL_MINUTES_CEILING, number ?? org);

/** The UTC day a spend belongs to. */
export const spendDay = (at: Date) => at.toISOString().slice(0, 10);
