// Fixtures of the Number Health tests: provider evidence is written by caller trust's reputation provider, so the
// tests insert its rows (number_reputation) with SQL; a clock the tests move; organizations with raised limits.
import { setLimits } from '../../shared/calls/limits.ts';
import type { Clock } from '../../shared/clock.ts';
import type { TestEnv } from '../helpers/env.ts';

export class TestClock implements Clock {
  constructor(public ms: number) {}
  now() { return this.ms; }
  advance(ms: number) { this.ms += ms; }
}

export const DAY = 24 * 3600_000;
type Risk = 'LOW' | 'MEDIUM' | 'HIGH' | null;

/** Writes the provider's answer for each carrier given (risk null: unavailable). */
export async function setReputation(env: TestEnv, orgId: string, phoneId: number, risks: Partial<Record<'ATT' | 'TMOBILE' | 'VERIZON', Risk>>,
  checkedAt = new Date()) {
  for (const [carrier, risk] of Object.entries(risks)) {
    await env.db.none(
      `INSERT INTO number_reputation (phone_id, carrier, organization_id, risk_level, displayed_label, provider, checked_at)
       VALUES ($1, $2, $3, $4, 'Test Co', 'fixture', $5)
       ON CONFLICT (phone_id, carrier) DO UPDATE SET risk_level = EXCLUDED.risk_level, checked_at = EXCLUDED.checked_at`,
      [phoneId, carrier, orgId, risk, checkedAt]);
  }
}

export const allLow = { ATT: 'LOW', TMOBILE: 'LOW', VERIZON: 'LOW' } as const;

export async function phoneIds(env: TestEnv, orgId: string): Promise<{ id: number; phone_number: string }[]> {
  return env.db.any('SELECT id, phone_number FROM phone_numbers WHERE organization_id = $1 ORDER BY id', [orgId]);
}

/** Marks the numbers registered with the call-analytics providers (what /v1/number-registration and its provider
 *  reach; a fresh number is not registered, and SETUP_INCOMPLETE names that). */
export async function setRegistered(env: TestEnv, orgId: string, phoneIds: number[]) {
  await env.db.none(
    `INSERT INTO number_registrations (phone_id, organization_id, status, provider, details, decided_at)
     SELECT id, $1, 'registered', 'fixture', '{"business_name": "Test Co", "ein": "12-3456789", "call_purpose": "customer_service",
       "address": null, "source": "request", "enterprise_registration_id": null}'::jsonb, now()
       FROM unnest($2::bigint[]) AS id
     ON CONFLICT (phone_id) DO UPDATE SET status = 'registered', decided_at = now()`, [orgId, phoneIds]);
}

/** An organization whose numbers have a complete setup (identity, monitoring, registration). */
export async function nhOrg(env: TestEnv, numbers: number, org?: string) {
  const o = await env.bootstrap({ numbers, org });
  await setLimits(env.db, o.organization_id, { channel_limit: 1000, calls_per_minute: 10_000, daily_spend_cap_cents: 100_000_000 });
  const phones = await phoneIds(env, o.organization_id);
  await setRegistered(env, o.organization_id, phones.map((p) => p.id));
  return { ...o, phones };
}
