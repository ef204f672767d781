// Recounts one number's handset evidence from its observed attempts (run in the observation's transaction), so
// fleet reads and set resolution read one summary row per number instead of every attempt.
//
// A qualifying interaction: an observed attempt of a HUMAN_READINESS session whose tester consented, on a call that
// is not an AI call, was picked up and lasted at least the conversational duration. The UTC-day dedup: one
// interaction per (tester, UTC calendar day of the call) counts; more are kept, not counted again.
import type { Tx } from '../db.ts';
import { HANDSET_MODES, READINESS, READINESS_MODES, utcDay, type TesterNetwork, type Outcome } from './policy.ts';
import type { ObservationSummary } from './facts.ts';

interface ObservedAttempt {
  id: string; mode: string; tester_phone: string; tester_carrier: TesterNetwork; tester_consented: boolean;
  call_type: string; picked_up: boolean; duration_seconds: number | null; call_at: Date;
  outcome: Outcome; observed_label: string; callback_verified: boolean;
}

export async function recountSummary(tx: Tx, organizationId: string, phoneId: number, now: Date): Promise<void> {
  // Serialize recounts of one number on its summary row: a concurrent observation of the same number commits first,
  // and the recount below (a new statement, a new snapshot) then sees it.
  await tx.none(
    `INSERT INTO number_health_summaries (phone_id, organization_id, qualifying_calls, consented_testers, active_days, clean_carriers,
       callback_verified, latest_by_carrier, updated_at)
     VALUES ($1, $2, 0, 0, 0, '{}', false, '{}', $3) ON CONFLICT (phone_id) DO NOTHING`, [phoneId, organizationId, now]);
  await tx.one('SELECT 1 FROM number_health_summaries WHERE phone_id = $1 FOR UPDATE', [phoneId]);
  const rows = await tx.any<ObservedAttempt>(
    `SELECT a.id, s.mode, s.tester_phone, s.tester_carrier, s.tester_consented, c.type AS call_type, c.picked_up,
            c.duration_seconds, c.created_at AS call_at, a.outcome, a.observed_label, a.callback_verified
       FROM spam_test_attempts a JOIN spam_test_sessions s ON s.id = a.session_id JOIN calls c ON c.id = a.call_id
      WHERE a.organization_id = $1 AND a.phone_id = $2 AND a.outcome IS NOT NULL
      ORDER BY c.created_at, a.id`, [organizationId, phoneId]);
  const counted = (m: string) => (READINESS_MODES as readonly string[]).includes(m);
  const qualifying = rows.filter((r) => counted(r.mode) && r.tester_consented && r.call_type !== 'ai' && r.picked_up
    && (r.duration_seconds ?? 0) >= READINESS.conversationalSeconds);
  const interactions = new Set(qualifying.map((r) => `${r.tester_phone}|${utcDay(r.call_at.getTime())}`));
  const latest: Record<string, ObservationSummary> = {};
  for (const r of rows) {
    if (!(HANDSET_MODES as readonly string[]).includes(r.mode)) continue;
    latest[r.tester_carrier] = {
      carrier: r.tester_carrier, outcome: r.outcome, observed_label: r.observed_label, observed_at: r.call_at.toISOString(),
      duration_seconds: r.duration_seconds, callback_verified: r.callback_verified, attempt_id: r.id, mode: r.mode,
    };
  }
  await tx.none(
    `INSERT INTO number_health_summaries (phone_id, organization_id, qualifying_calls, consented_testers, active_days, clean_carriers,
       callback_verified, last_qualifying_at, latest_by_carrier, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (phone_id) DO UPDATE SET qualifying_calls = EXCLUDED.qualifying_calls, consented_testers = EXCLUDED.consented_testers,
       active_days = EXCLUDED.active_days, clean_carriers = EXCLUDED.clean_carriers, callback_verified = EXCLUDED.callback_verified,
       last_qualifying_at = EXCLUDED.last_qualifying_at, latest_by_carrier = EXCLUDED.latest_by_carrier, updated_at = EXCLUDED.updated_at`,
    [phoneId, organizationId, interactions.size, new Set(qualifying.map((r) => r.tester_phone)).size,
      new Set(qualifying.map((r) => utcDay(r.call_at.getTime()))).size,
      [...new Set(qualifying.filter((r) => r.outcome === 'CLEAN').map((r) => r.tester_carrier))],
      rows.some((r) => counted(r.mode) && r.tester_consented && r.callback_verified),
      qualifying.length ? qualifying[qualifying.length - 1].call_at : null, JSON.stringify(latest), now]);
}
