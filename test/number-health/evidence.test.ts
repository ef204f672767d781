// The evidence rule, row by row against the reference's evidence_state table (and the policy's thresholds).
import t from 'tap';
import { evaluateEvidence, evidenceValidUntil, TIER, type EvidenceInput, type ProviderScore, type ReadinessCounts } from '../../shared/number-health/evidence.ts';
import { HANDSET_RECENT_MS, PROVIDER_FRESH_MS, READINESS } from '../../shared/number-health/policy.ts';

const NOW = Date.parse('2026-11-23T12:00:00Z');
const DAY = 24 * 3600_000;
const low = (checkedAgo = DAY): ProviderScore[] => (['ATT', 'TMOBILE', 'VERIZON'] as const)
  .map((carrier) => ({ carrier, risk_level: 'LOW', checked_at: NOW - checkedAgo }));
const READY: ReadinessCounts = {
  qualifyingCalls: 8, consentedTesters: 5, activeDays: 4, cleanCarriers: ['ATT', 'TMOBILE', 'VERIZON'], callbackVerified: true,
  lastQualifyingAt: NOW - 2 * DAY,
};
/** Everything clean: each row below changes one thing. */
const clean = (o: Partial<EvidenceInput> = {}): EvidenceInput => ({
  now: NOW, numberStatus: 'ACTIVE', retiredMembership: false, setup: { identity: true, monitoring: true, registration: true }, scores: low(),
  latest: [{ carrier: 'ATT', outcome: 'CLEAN', observed_at: NOW - 2 * DAY }], readiness: READY, ...o,
});
const state = (i: EvidenceInput) => evaluateEvidence(i).evidence_state;

t.test('CLEAN_OBSERVED: fresh LOW, complete setup, readiness met with recent non-negative evidence', async (t) => {
  const e = evaluateEvidence(clean());
  t.equal(e.evidence_state, 'CLEAN_OBSERVED');
  t.equal(e.health_warning, null);
  t.equal(e.recommended_action, 'NONE');
  t.equal(e.readiness.met, true);
  t.same(e.readiness.provider_risk.carriers, { ATT: 'LOW', TMOBILE: 'LOW', VERIZON: 'LOW' });
});

t.test('NEEDS_DATA: insufficient or stale evidence; unknown is never clean', async (t) => {
  const cases: [string, EvidenceInput, string][] = [
    ['never checked', clean({ scores: [] }), 'FRESH_CHECK'],
    ['one carrier unavailable (null risk)', clean({ scores: [...low().slice(0, 2), { carrier: 'VERIZON', risk_level: null, checked_at: NOW }] }), 'FRESH_CHECK'],
    ['one carrier missing', clean({ scores: low().slice(0, 2) }), 'FRESH_CHECK'],
    ['LOW but stale', clean({ scores: low(PROVIDER_FRESH_MS + 1) }), 'FRESH_CHECK'],
    ['no handset evidence at all', clean({ readiness: { ...READY, qualifyingCalls: 0, consentedTesters: 0, activeDays: 0, cleanCarriers: [], callbackVerified: false, lastQualifyingAt: null }, latest: [] }), 'RUN_SPAM_TEST'],
    ['7 qualifying calls', clean({ readiness: { ...READY, qualifyingCalls: READINESS.qualifyingHumanCalls - 1 } }), 'RUN_SPAM_TEST'],
    ['4 testers', clean({ readiness: { ...READY, consentedTesters: 4 } }), 'RUN_SPAM_TEST'],
    ['3 active days', clean({ readiness: { ...READY, activeDays: 3 } }), 'RUN_SPAM_TEST'],
    ['no CLEAN on VERIZON', clean({ readiness: { ...READY, cleanCarriers: ['ATT', 'TMOBILE'] } }), 'RUN_SPAM_TEST'],
    ['no verified callback', clean({ readiness: { ...READY, callbackVerified: false } }), 'RUN_SPAM_TEST'],
    ['qualifying evidence too old', clean({ readiness: { ...READY, lastQualifyingAt: NOW - HANDSET_RECENT_MS - 1 } }), 'RUN_SPAM_TEST'],
  ];
  for (const [name, input, action] of cases) {
    const e = evaluateEvidence(input);
    t.equal(e.evidence_state, 'NEEDS_DATA', name);
    t.equal(e.recommended_action, action, `${name}: ${action}`);
    t.match(e.health_warning, /\w/, `${name}: says why`);
  }
  const e = evaluateEvidence(clean({ scores: [...low().slice(0, 2), { carrier: 'VERIZON', risk_level: null, checked_at: NOW }] }));
  t.equal(e.readiness.provider_risk.carriers.VERIZON, 'UNAVAILABLE', 'null risk is unavailable, not zero risk');
  t.match(e.health_warning, /unknown is not clean/);
});

t.test('WATCH: MEDIUM provider risk', async (t) => {
  const medium = clean({ scores: [...low().slice(0, 2), { carrier: 'VERIZON', risk_level: 'MEDIUM', checked_at: NOW }] });
  const e = evaluateEvidence(medium);
  t.equal(e.evidence_state, 'WATCH');
  t.equal(e.recommended_action, 'MONITOR');
  t.match(e.health_warning, /MEDIUM provider risk on VERIZON/);
  t.equal(state({ ...medium, scores: [{ carrier: 'ATT', risk_level: 'MEDIUM', checked_at: NOW - PROVIDER_FRESH_MS * 3 }] }), 'WATCH',
    'a stale MEDIUM still warns');
});

t.test('FLAGGED: HIGH risk or recent negative handset evidence', async (t) => {
  const high = evaluateEvidence(clean({ scores: [...low().slice(0, 2), { carrier: 'VERIZON', risk_level: 'HIGH', checked_at: NOW }] }));
  t.equal(high.evidence_state, 'FLAGGED');
  t.equal(high.recommended_action, 'REQUEST_REMEDIATION');
  t.match(high.health_warning, /HIGH provider risk on VERIZON/);
  t.equal(state(clean({ scores: [{ carrier: 'ATT', risk_level: 'HIGH', checked_at: NOW - 60 * DAY }] })), 'FLAGGED', 'an old HIGH is not proof of clean');
  t.equal(state(clean({ scores: [...low().slice(0, 2), { carrier: 'VERIZON', risk_level: 'HIGH', checked_at: NOW }, ] })), 'FLAGGED', 'HIGH beats MEDIUM');
  for (const outcome of ['WRONG_NAME', 'SPAM', 'SCAM', 'BLOCKED', 'NO_RING'] as const) {
    const e = evaluateEvidence(clean({ latest: [{ carrier: 'TMOBILE', outcome, observed_at: NOW - DAY }] }));
    t.equal(e.evidence_state, 'FLAGGED', `recent ${outcome}`);
    t.match(e.health_warning, new RegExp(`${outcome} observed on TMOBILE`));
    t.equal(e.readiness.no_recent_negative_display.met, false);
  }
  t.equal(state(clean({ latest: [{ carrier: 'TMOBILE', outcome: 'SPAM', observed_at: NOW - HANDSET_RECENT_MS - 1 }] })), 'CLEAN_OBSERVED',
    'an old negative is no longer recent');
  for (const outcome of ['NUMBER_ONLY', 'LOCATION', 'UNKNOWN'] as const) {
    t.equal(state(clean({ latest: [{ carrier: 'ATT', outcome, observed_at: NOW - DAY }] })), 'CLEAN_OBSERVED', `${outcome} is not negative`);
  }
});

t.test('SETUP_INCOMPLETE: missing identity, registration or monitoring, or still provisioning', async (t) => {
  const cases: [string, Partial<EvidenceInput>, RegExp][] = [
    ['no identity', { setup: { identity: false, monitoring: true, registration: true } }, /identity/],
    ['no monitoring', { setup: { identity: true, monitoring: false, registration: true } }, /monitoring/],
    ['not registered', { setup: { identity: true, monitoring: true, registration: false } }, /number registration/],
    ['provisioning', { numberStatus: 'PROVISIONING' }, /provisioning/],
  ];
  for (const [name, o, why] of cases) {
    const e = evaluateEvidence(clean({ ...o, scores: [{ carrier: 'ATT', risk_level: 'HIGH', checked_at: NOW }] }));
    t.equal(e.evidence_state, 'SETUP_INCOMPLETE', `${name} (even with a HIGH risk)`);
    t.equal(e.recommended_action, 'COMPLETE_SETUP');
    t.match(e.health_warning, why);
  }
});

t.test('RETIRED: inactive number or retired set membership; wins over everything', async (t) => {
  t.equal(state(clean({ numberStatus: 'RELEASED' })), 'RETIRED');
  t.equal(state(clean({ retiredMembership: true, setup: { identity: false, monitoring: false, registration: false } })), 'RETIRED');
  const e = evaluateEvidence(clean({ retiredMembership: true }));
  t.match(e.health_warning, /history kept/);
  t.equal(e.recommended_action, 'NONE');
});

t.test('selection tiers: healthiest first, unknown above known MEDIUM', async (t) => {
  const order = Object.entries(TIER).sort((a, b) => a[1] - b[1]).map(([s]) => s);
  t.same(order, ['CLEAN_OBSERVED', 'NEEDS_DATA', 'WATCH', 'SETUP_INCOMPLETE', 'FLAGGED', 'RETIRED']);
});

t.test('readiness progress reports each threshold of the policy', async (t) => {
  const r = evaluateEvidence(clean({ readiness: { ...READY, qualifyingCalls: 3, consentedTesters: 2, activeDays: 1 } })).readiness;
  t.same(r.qualifying_human_calls, { required: 8, observed: 3, met: false });
  t.same(r.consented_testers, { required: 5, observed: 2, met: false });
  t.same(r.active_days, { required: 4, observed: 1, met: false });
  t.same(r.clean_observation_carriers, { required: ['ATT', 'TMOBILE', 'VERIZON'], observed: ['ATT', 'TMOBILE', 'VERIZON'], met: true });
  t.equal(r.met, false);
});

t.test('valid until: the next time the evidence can change with time alone', async (t) => {
  t.equal(evidenceValidUntil(clean({ scores: low(DAY), latest: [], readiness: { ...READY, lastQualifyingAt: null } })), NOW - DAY + PROVIDER_FRESH_MS,
    'a LOW answer goes stale');
  t.equal(evidenceValidUntil(clean()), Math.min(NOW - DAY + PROVIDER_FRESH_MS, READY.lastQualifyingAt! + HANDSET_RECENT_MS));
  t.equal(evidenceValidUntil(clean({ scores: [{ carrier: 'ATT', risk_level: 'HIGH', checked_at: NOW }], latest: [], readiness: { ...READY, lastQualifyingAt: null } })), null,
    'nothing ahead depends on time');
  const neg = NOW - DAY;
  t.equal(evidenceValidUntil(clean({ scores: [], latest: [{ carrier: 'ATT', outcome: 'SPAM', observed_at: neg }], readiness: { ...READY, lastQualifyingAt: null } })),
    neg + HANDSET_RECENT_MS, 'a negative stops being recent');
});
