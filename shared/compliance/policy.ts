// The organization's compliance policy as stored (compliance_policies; no row = every rule off) and as the API
// shows it.
import type { Static } from '@sinclair/typebox';
import { writeWithin, type Db, type Tx, type WithinTx } from '../db.ts';
import { DEFAULT_POLICY, type CompliancePolicy } from './decide.ts';
import type { PolicyResponse } from './schemas.ts';
import type { Weekday } from './timezone.ts';

export interface PolicyRow {
  window_enabled: boolean; window_start: string; window_end: string;
  days_enabled: boolean; allowed_days: string[];
  frequency_enabled: boolean; max_calls: number; period_hours: number;
  consent_required: boolean;
  updated_at: Date | null;
}

export const policyFromRow = (r: PolicyRow): CompliancePolicy => ({
  window: { enabled: r.window_enabled, start: r.window_start, end: r.window_end },
  days: { enabled: r.days_enabled, allowed: r.allowed_days as Weekday[] },
  frequency: { enabled: r.frequency_enabled, maxCalls: r.max_calls, periodHours: r.period_hours },
  consentRequired: r.consent_required,
});

/** The policy as the API shows it (GET and PATCH /v1/compliance/policy). */
export type PolicyView = Static<typeof PolicyResponse>;

export const policyView = (p: CompliancePolicy, updatedAt: Date | null): PolicyView => ({
  call_window: { enabled: p.window.enabled, start: p.window.start, end: p.window.end },
  allowed_days: { enabled: p.days.enabled, days: p.days.allowed },
  frequency: { enabled: p.frequency.enabled, max_calls: p.frequency.maxCalls, period_hours: p.frequency.periodHours },
  consent_required: p.consentRequired,
  updated_at: updatedAt ? updatedAt.toISOString() : null,
});

export async function readPolicy(db: Db | Tx, organizationId: string): Promise<{ policy: CompliancePolicy; updatedAt: Date | null }> {
  const row = await db.oneOrNone<PolicyRow>('SELECT * FROM compliance_policies WHERE organization_id = $1', [organizationId]);
  return row ? { policy: policyFromRow(row), updatedAt: row.updated_at } : { policy: DEFAULT_POLICY, updatedAt: null };
}

export interface PolicyPatch {
  call_window?: { enabled?: boolean; start?: string; end?: string };
  allowed_days?: { enabled?: boolean; days?: Weekday[] };
  frequency?: { enabled?: boolean; max_calls?: number; period_hours?: number };
  consent_required?: boolean;
}

/** Merges the patch over the current policy (the parts not given keep their values); the caller has validated it. */
export function mergePolicy(p: CompliancePolicy, patch: PolicyPatch): CompliancePolicy {
  return {
    window: { ...p.window, ...defined({ enabled: patch.call_window?.enabled, start: patch.call_window?.start, end: patch.call_window?.end }) },
    days: { ...p.days, ...defined({ enabled: patch.allowed_days?.enabled, allowed: patch.allowed_days?.days }) },
    frequency: { ...p.frequency, ...defined({ enabled: patch.frequency?.enabled, maxCalls: patch.frequency?.max_calls, periodHours: patch.frequency?.period_hours }) },
    consentRequired: patch.consent_required ?? p.consentRequired,
  };
}

const defined = <T extends object>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

export async function writePolicy(db: Db, organizationId: string, p: CompliancePolicy, within?: WithinTx<PolicyRow>): Promise<PolicyRow> {
  return writeWithin(db, within, (q) => q.one<PolicyRow>(
    `INSERT INTO compliance_policies (organization_id, window_enabled, window_start, window_end, days_enabled, allowed_days,
                                      frequency_enabled, max_calls, period_hours, consent_required, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now())
     ON CONFLICT (organization_id) DO UPDATE SET window_enabled = EXCLUDED.window_enabled, window_start = EXCLUDED.window_start,
       window_end = EXCLUDED.window_end, days_enabled = EXCLUDED.days_enabled, allowed_days = EXCLUDED.allowed_days,
       frequency_enabled = EXCLUDED.frequency_enabled, max_calls = EXCLUDED.max_calls, period_hours = EXCLUDED.period_hours,
       consent_required = EXCLUDED.consent_required, updated_at = now()
     RETURNING *`,
    [organizationId, p.window.enabled, p.window.start, p.window.end, p.days.enabled, p.days.allowed,
      p.frequency.enabled, p.frequency.maxCalls, p.frequency.periodHours, p.consentRequired]));
}
