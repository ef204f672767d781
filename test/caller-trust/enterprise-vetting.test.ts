// Sandbox vetting through a spawned workers process: the delayed BullMQ job (scaled by SANDBOX_TIME_SCALE) approves,
// or rejects an EIN ending in 9 with reasons; resign goes back into vetting; enterprise.status.updated is delivered
// as a webhook for every change; APPROVED shows as own_brand_enterprise on GET /v1/account.
import t from 'tap';
import { eventually, testEnv } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { subscribe } from '../webhooks/helpers.ts';
import { createRegistration, SIGN } from './helpers.ts';

const env = await testEnv(t, { env: { WEBHOOK_ALLOW_INSECURE: '1', SANDBOX_TIME_SCALE: '0.01', WEBHOOK_TIMEOUT_MS: '2000' } });
const workers = env.spawn('workers');
await workers.ready(60_000);
const rx = await startReceiver(t);
const BASE = '/v1/caller-trust/enterprise';

const statusOf = (key: string, id: string, want: string) => eventually(async () => {
  const r = await env.request('GET', `${BASE}/${id}`, { key });
  return r.body.data?.status === want ? r.body.data : null;
}, 90_000, 100);

t.test('an EIN ending in 9 is rejected with reasons; resigned with a fixed EIN it is approved', async (t) => {
  const org = await env.bootstrap({ org: 'Vetted Co', numbers: 2 });
  await subscribe(env, org.api_key, rx.url('/enterprise'), 'enterprise.status.updated');
  const account = async () => (await env.request('GET', '/v1/account', { key: org.api_key })).body.data.footprint.own_brand_enterprise;
  t.equal(await account(), false);
  const id = await createRegistration(env, org.api_key, org.phone_numbers, { ein: '74-1234569', legal_name: 'Vetted Co LLC' });
  const s = await env.request('POST', `${BASE}/${id}/sign-and-submit`, { key: org.api_key, body: SIGN });
  t.equal(s.body.data.status, 'PENDING_VETTING');
  const rejected = await statusOf(org.api_key, id, 'REJECTED');
  t.equal(rejected.rejection_reasons.length, 2);
  t.match(rejected.rejection_reasons[0], /^ein_mismatch: /);
  t.equal(await account(), false, 'not approved: no own brand');

  const rs = await env.request('POST', `${BASE}/${id}/resign`, { key: org.api_key, body: { ...SIGN, changes: { ein: '74-1234568' } } });
  t.equal(rs.status, 200);
  t.equal(rs.body.data.status, 'PENDING_VETTING');
  const approved = await statusOf(org.api_key, id, 'APPROVED');
  t.same(approved.rejection_reasons, []);
  t.ok(approved.decided_at);
  await eventually(async () => (await account()) === true, 30_000, 100);
  t.equal(await account(), true, 'own_brand_enterprise on GET /v1/account');

  const got = await rx.waitForCount(4, { path: '/enterprise' });
  const bodies = got.map((r) => r.body).sort((a, b) => (a.id < b.id ? -1 : 1));
  t.same(bodies.map((b) => b.event_type), Array(4).fill('enterprise.status.updated'));
  t.same(bodies.map((b) => `${b.data.previous_status}>${b.data.status}`),
    ['DRAFT>PENDING_VETTING', 'PENDING_VETTING>REJECTED', 'REJECTED>PENDING_VETTING', 'PENDING_VETTING>APPROVED']);
  for (const b of bodies) {
    t.same(Object.keys(b.data).sort(), ['id', 'occurred_at', 'previous_status', 'reasons', 'status']);
    t.equal(b.data.id, id);
    t.match(b.data.occurred_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  }
  t.same(bodies[1].data.reasons, rejected.rejection_reasons, 'the rejection event carries the reasons');
  t.same(bodies[3].data.reasons, []);
});

t.test('an uploaded LOA goes through the same vetting; another organization is not affected', async (t) => {
  const org = await env.bootstrap({ org: 'Upload Vetted', numbers: 1 });
  const bystander = await env.bootstrap({ org: 'Bystander', numbers: 1 });
  const id = await createRegistration(env, org.api_key, org.phone_numbers, { ein: '20-0000001' });
  const loa = await env.request('POST', `${BASE}/${id}/generate-loa`, { key: org.api_key });
  const pdf = await env.request('GET', new URL(loa.body.data.loa.unsigned.url).pathname + '?version=unsigned', { key: org.api_key });
  const s = await env.request('POST', `${BASE}/${id}/submit`, { key: org.api_key, body: { signed_loa_pdf: pdf.raw.toString('base64') } });
  t.equal(s.body.data.status, 'PENDING_VETTING');
  await statusOf(org.api_key, id, 'APPROVED');
  t.equal((await env.request('GET', '/v1/account', { key: bystander.api_key })).body.data.footprint.own_brand_enterprise, false);
});

t.test('a submission whose hand-off to the provider was lost is vetted by the workers\' sweep', async (t) => {
  const org = await env.bootstrap({ org: 'Lost Handoff', numbers: 1 });
  const id = await createRegistration(env, org.api_key, org.phone_numbers, { ein: '31-0000002' });
  // As if the gateway died between the commit to PENDING_VETTING and enqueueing the vetting job.
  await env.db.none(`UPDATE enterprise_registrations SET status = 'PENDING_VETTING', vetting_round = 1, vetting_provider = 'sandbox',
    submitted_at = now() - interval '1 hour' WHERE id = $1`, [id]);
  const done = await statusOf(org.api_key, id, 'APPROVED');
  t.equal(done.status, 'APPROVED');
});
