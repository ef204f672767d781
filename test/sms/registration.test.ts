// The texting registration: every state and move, its event on each change, the numbers' texting_status, and
// every texting_not_ready reason of POST /v1/sms/send.
import t, { type Test } from 'tap';
import { eventually, type TestEnv } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { BRAND, CAMPAIGN, registrationStatus, smsEnv, submitRegistration, subscribe, waitRegistration, type Org } from './helpers.ts';

// Phase 1 runs without the workers: a submitted registration stays pending.
const { env } = await smsEnv(t, {}, { workers: false });
const rx = await startReceiver(t);

const events = (org: Org) => rx.unique()
  .filter((r) => r.body?.event_type === 'TEXTING_REGISTRATION_STATUS_CHANGED' && r.body.data.organization_id === org.organization_id)
  .map((r) => r.body.data).sort((a, b) => a.updated_at.localeCompare(b.updated_at));

async function sendFrom(e: TestEnv, org: Org, from: string) {
  return e.request('POST', '/v1/sms/send', { key: org.api_key, body: { from_number: from, to_number: '+12125550187', body: 'Hi. Reply STOP to opt out.' } });
}

function notReady(t: Test, r: { status: number; body: any }, reason: string, registrationStatus: string) {
  t.equal(r.status, 403, `403 for ${reason}`);
  t.equal(r.body.error.code, 'texting_not_ready');
  t.same(r.body.error.fields, { reason, registration_status: registrationStatus });
}

const org = await env.bootstrap({ org: 'Acme Dental', numbers: 2 });
await subscribe(env, rx, org, ['TEXTING_REGISTRATION_STATUS_CHANGED']);

t.test('none: no registration, numbers not_registered, sends refused a2p_registration_required', async (t) => {
  const r = await env.request('GET', '/v1/sms/registration', { key: org.api_key });
  t.equal(r.status, 200);
  t.match(r.body.data, { id: null, status: 'none', brand: null, campaign: null, rejection_reason: null });
  t.same(r.body.data.numbers.map((n: any) => n.texting_status), ['not_registered', 'not_registered']);
  notReady(t, await sendFrom(env, org, org.phone_numbers[0]), 'a2p_registration_required', 'none');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM sms_messages')).n, 0, 'nothing written');
});

t.test('validation names each bad field and writes nothing', async (t) => {
  const r = await submitRegistration(env, org, { brand: { ...BRAND, ein: 'abc', country: 'FR' }, campaign: { ...CAMPAIGN, sample_messages: [] } });
  t.equal(r.status, 400);
  t.equal(r.body.error.code, 'validation_error');
  t.match(r.body.error.fields, { 'brand.ein': String, 'brand.country': String, 'campaign.sample_messages': String });
  t.equal(await registrationStatus(env, org), 'none');
});

t.test('none -> pending: event, numbers pending, sends refused a2p_registration_pending, second submit 409', async (t) => {
  const r = await submitRegistration(env, org);
  t.equal(r.status, 202);
  t.match(r.body.data, { status: 'pending', brand: BRAND, campaign: CAMPAIGN, provider: 'sandbox', decided_at: null });
  t.same(r.body.data.numbers.map((n: any) => n.texting_status), ['pending', 'pending']);
  // The relay runs in the workers (not started yet): the event is in the outbox, committed with the change.
  const ev = (await env.db.one(`SELECT data FROM events WHERE event_type = 'TEXTING_REGISTRATION_STATUS_CHANGED'
                                  AND data->>'organization_id' = $1`, [org.organization_id])).data;
  t.match(ev, { id: r.body.data.id, status: 'pending', previous_status: 'none', brand_name: BRAND.legal_name, rejection_reason: null });
  notReady(t, await sendFrom(env, org, org.phone_numbers[0]), 'a2p_registration_pending', 'pending');
  const again = await submitRegistration(env, org);
  t.equal(again.status, 409);
  t.equal(again.body.error.code, 'state_conflict');
  t.same(again.body.error.fields, { entity: 'texting_registration', status: 'pending' });
});

t.test('scopes and organizations', async (t) => {
  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['sms:read'] });
  const w = await submitRegistration(env, { ...org, api_key: ro.apiKey });
  t.equal(w.status, 403);
  t.equal(w.body.error.code, 'scope_missing');
  t.equal((await env.request('GET', '/v1/sms/registration', { key: ro.apiKey })).status, 200);
  const none = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['calls:read'] });
  const g = await env.request('GET', '/v1/sms/registration', { key: none.apiKey });
  t.equal(g.status, 403);
  t.equal(g.body.error.code, 'scope_missing');
  const other = await env.bootstrap({ org: 'Other Co' });
  t.equal(await registrationStatus(env, other), 'none', 'another organization does not see this registration');
});

t.test('with the workers: vetting approves or rejects, each with its event', async (t) => {
  const workers = env.spawn('workers');
  await workers.ready();
  t.teardown(() => workers.kill());

  await t.test('pending -> approved: numbers registered, a number bought later is registered too', async (t) => {
    await waitRegistration(env, org, 'approved');
    const r = (await env.request('GET', '/v1/sms/registration', { key: org.api_key })).body.data;
    t.match(r, { status: 'approved', rejection_reason: null });
    t.ok(r.decided_at);
    t.same(r.numbers.map((n: any) => n.texting_status), ['registered', 'registered']);
    await eventually(async () => events(org).length >= 2, 60_000);
    t.same(events(org).map((e) => `${e.previous_status}->${e.status}`), ['none->pending', 'pending->approved'], 'both changes delivered');
    const bought = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { area_code: '512' } });
    t.equal(bought.status, 202, bought.text);
    const row = await env.db.one('SELECT texting_status FROM phone_numbers WHERE phone_number = $1', [bought.body.data.phone_number]);
    t.equal(row.texting_status, 'registered');
    // A PROVISIONING number cannot send yet; a number of no one cannot either. The workers may activate the bought
    // number between any read and the send, so the send's answer is checked against the status it left behind.
    const fromBought = await sendFrom(env, org, bought.body.data.phone_number);
    if (fromBought.status === 202) {
      const after = await env.db.one('SELECT status FROM phone_numbers WHERE phone_number = $1', [bought.body.data.phone_number]);
      t.equal(after.status, 'ACTIVE', 'a bought number sends only once it is ACTIVE');
    } else {
      notReady(t, fromBought, 'no_sender', 'approved');
    }
    notReady(t, await sendFrom(env, org, '+14155559999'), 'no_sender', 'approved');
    const ok = await sendFrom(env, org, org.phone_numbers[0]);
    t.equal(ok.status, 202, 'an approved registration and an ACTIVE number send');
    const again = await submitRegistration(env, org);
    t.equal(again.status, 409);
    t.same(again.body.error.fields, { entity: 'texting_registration', status: 'approved' });
  });

  await t.test('rejected (EIN), then resubmitted and approved; rejected (no opt-out language)', async (t) => {
    const o = await env.bootstrap({ org: 'Shady Co', numbers: 1 });
    await subscribe(env, rx, o, ['TEXTING_REGISTRATION_STATUS_CHANGED']);
    t.equal((await submitRegistration(env, o, { brand: { ...BRAND, ein: '00-1234567' }, campaign: CAMPAIGN })).status, 202);
    await waitRegistration(env, o, 'rejected');
    const r = (await env.request('GET', '/v1/sms/registration', { key: o.api_key })).body.data;
    t.match(r, { status: 'rejected', rejection_reason: 'brand_identity_unverified' });
    t.same(r.numbers.map((n: any) => n.texting_status), ['rejected']);
    notReady(t, await sendFrom(env, o, o.phone_numbers[0]), 'a2p_registration_rejected', 'rejected');
    const rejectedEv = await eventually(async () => events(o).find((e) => e.status === 'rejected'), 60_000);
    t.match(rejectedEv, { previous_status: 'pending', rejection_reason: 'brand_identity_unverified' });

    const headers = { 'idempotency-key': `reg-${o.organization_id}` };
    const re = await env.request('POST', '/v1/sms/registration', { key: o.api_key, body: { brand: BRAND, campaign: CAMPAIGN }, headers });
    const replay = await env.request('POST', '/v1/sms/registration', { key: o.api_key, body: { brand: BRAND, campaign: CAMPAIGN }, headers });
    t.same(replay.body, re.body, 'a repeated submission with the same Idempotency-Key replays the answer');
    t.equal(re.status, 202, 'a rejected registration can be submitted again');
    t.equal(re.body.data.id, r.id, 'same registration');
    t.equal(re.body.data.rejection_reason, null);
    await waitRegistration(env, o, 'approved');
    await eventually(async () => events(o).length >= 4, 60_000);
    t.same(events(o).map((e) => `${e.previous_status}->${e.status}`), ['none->pending', 'pending->rejected', 'rejected->pending', 'pending->approved'],
      'one event per change, in order');

    const o2 = await env.bootstrap({ org: 'No Stop Co', numbers: 1 });
    await submitRegistration(env, o2, { brand: BRAND, campaign: { ...CAMPAIGN, sample_messages: ['Big sale today only at Acme!'] } });
    await waitRegistration(env, o2, 'rejected');
    t.equal((await env.request('GET', '/v1/sms/registration', { key: o2.api_key })).body.data.rejection_reason, 'campaign_opt_out_language_missing');
  });
});
