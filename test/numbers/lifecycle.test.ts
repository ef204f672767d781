import t from 'tap';
import { eventually, testEnv } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { activateNumber, purchaseNumber } from '../../shared/numbers/lifecycle.ts';
import { subscribe } from '../webhooks/helpers.ts';

// The phone-number lifecycle end to end through the real workers: purchase -> PROVISIONING -> ACTIVE with
// number_purchased, release with number_released, and the "held by one organization" rule.
const env = await testEnv(t, { env: { WEBHOOK_ALLOW_INSECURE: '1', SANDBOX_TIME_SCALE: '0.01', WEBHOOK_RETRY_SCALE: '0.01' } });
const workers = env.spawn('workers');
await workers.ready();
const rx = await startReceiver(t);

const getNumber = (key: string, id: number) => env.request('GET', `/v1/phone-numbers/${id}`, { key });

t.test('purchase by phone_number: 202 PROVISIONING, then ACTIVE and a signed number_purchased webhook', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const sub = await subscribe(env, org.api_key, rx.url('/purchased'), 'number_purchased');
  const avail = await env.request('GET', '/v1/phone-numbers/available?area_code=212&limit=5', { key: org.api_key });
  t.equal(avail.status, 200);
  t.equal(avail.body.data.length, 5);
  const pick = avail.body.data[0];
  t.same(Object.keys(pick).sort(), ['area_code', 'iso_country', 'phone_number', 'provider']);
  t.match(pick.phone_number, /^\+1212555\d{4}$/);
  t.equal(pick.area_code, '212');

  const r = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { phone_number: pick.phone_number, name: 'Sales line' } });
  t.equal(r.status, 202);
  const n = r.body.data;
  t.equal(n.status, 'PROVISIONING');
  t.equal(n.is_active, false);
  t.equal(n.phone_number, pick.phone_number);
  t.equal(n.name, 'Sales line');
  t.equal(n.area_code, '212');
  t.equal(n.organization_id, org.organization_id);
  t.equal(n.user_id, org.user_id);
  t.equal(n.provider, 'sandbox');
  t.equal(n.iso_country, 'US');
  t.ok(n.reputation_enrolled_at, 'auto-enrolled in reputation monitoring');
  t.type(n.id, 'number');
  t.equal(n.released_at, null);

  const [hook] = await rx.waitForCount(1, { path: '/purchased' });
  rx.verify(hook, sub.secret);
  t.equal(hook.body.event_type, 'number_purchased');
  t.strictSame(hook.body.data, {
    id: n.id, phone_number: pick.phone_number, area_code: '212', status: 'ACTIVE', organization_id: org.organization_id,
  }, 'the lifecycle record');
  const active = await getNumber(org.api_key, n.id);
  t.equal(active.body.data.status, 'ACTIVE');
  t.equal(active.body.data.is_active, true);
  t.ok(active.body.data.activated_at);
  const list = await env.request('GET', '/v1/phone-numbers', { key: org.api_key });
  t.same(list.body.data.map((x: any) => x.phone_number), [pick.phone_number]);
  t.equal(list.body.data[0].is_active, true);
});

t.test('purchase by area_code picks a free number of that area code', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const r = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { area_code: '617' } });
  t.equal(r.status, 202);
  t.match(r.body.data.phone_number, /^\+1617555\d{4}$/);
  t.equal(r.body.data.name, r.body.data.phone_number, 'name defaults to the number');
  await eventually(async () => (await getNumber(org.api_key, r.body.data.id)).body.data.status === 'ACTIVE');
});

t.test('release: RELEASED with released_at, number_released fires, the record stays readable', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const sub = await subscribe(env, org.api_key, rx.url('/released'), 'number_released');
  const bought = (await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { area_code: '305' } })).body.data;
  await eventually(async () => (await getNumber(org.api_key, bought.id)).body.data.status === 'ACTIVE');
  const r = await env.request('DELETE', `/v1/phone-numbers/${bought.id}`, { key: org.api_key });
  t.equal(r.status, 200);
  t.equal(r.body.data.status, 'RELEASED');
  t.equal(r.body.data.is_active, false);
  t.ok(r.body.data.released_at);
  const [hook] = await rx.waitForCount(1, { path: '/released' });
  rx.verify(hook, sub.secret);
  t.equal(hook.body.event_type, 'number_released');
  t.strictSame(hook.body.data, {
    id: bought.id, phone_number: bought.phone_number, area_code: '305', status: 'RELEASED', organization_id: org.organization_id,
  });
  const history = await getNumber(org.api_key, bought.id);
  t.equal(history.status, 200, 'history kept');
  t.equal(history.body.data.status, 'RELEASED');
  const list = await env.request('GET', '/v1/phone-numbers', { key: org.api_key });
  t.same(list.body.data, [], 'released numbers leave the list');
  const again = await env.request('DELETE', `/v1/phone-numbers/${bought.id}`, { key: org.api_key });
  t.equal(again.status, 404, 'a released number cannot be released again');

  // A released number can be bought again (by anyone); the old row stays as history.
  const other = await env.bootstrap({ numbers: 0 });
  const rebuy = await env.request('POST', '/v1/phone-numbers', { key: other.api_key, body: { phone_number: bought.phone_number } });
  t.equal(rebuy.status, 202);
  t.not(rebuy.body.data.id, bought.id);
  const rows = await env.db.any('SELECT status FROM phone_numbers WHERE phone_number = $1 ORDER BY id', [bought.phone_number]);
  t.equal(rows.length, 2);
  t.equal(rows[0].status, 'RELEASED', 'the old holder\'s row is history');
});

t.test('a number released while provisioning never turns active and never fires number_purchased', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  await subscribe(env, org.api_key, rx.url('/prov-purchased'), 'number_purchased');
  await subscribe(env, org.api_key, rx.url('/prov-released'), 'number_released');
  // Bought through the domain rule without enqueueing provisioning, so the release surely comes first; then the
  // provisioning step runs late, as a delayed job would.
  const row = await purchaseNumber(env.db, { organizationId: org.organization_id, userId: org.user_id }, { area_code: '702' });
  t.equal(row.status, 'PROVISIONING');
  const rel = await env.request('DELETE', `/v1/phone-numbers/${row.id}`, { key: org.api_key });
  t.equal(rel.status, 200);
  t.equal(await activateNumber(env.db, row.id), null, 'the late provisioning step is a no-op');
  const [hook] = await rx.waitForCount(1, { path: '/prov-released' });
  t.equal(hook.body.data.status, 'RELEASED');
  await new Promise((r) => setTimeout(r, 500));
  t.equal(rx.received('/prov-purchased').length, 0);
  t.equal((await env.db.one('SELECT status FROM phone_numbers WHERE id = $1', [row.id])).status, 'RELEASED');
});

t.test('a lost provisioning job is re-enqueued by the workers\' sweep', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const row = await purchaseNumber(env.db, { organizationId: org.organization_id, userId: org.user_id }, { area_code: '702' });
  // No job was enqueued (as if the gateway died after the commit); the sweep runs every second at this scale.
  await eventually(async () => (await getNumber(org.api_key, row.id)).body.data.status === 'ACTIVE', 10_000);
  t.pass('activated');
});

t.test('a number cannot be bought twice, nor by a second organization', async (t) => {
  const a = await env.bootstrap({ numbers: 0 });
  const b = await env.bootstrap({ numbers: 0 });
  const phone = (await env.request('GET', '/v1/phone-numbers/available?area_code=512&limit=1', { key: a.api_key })).body.data[0].phone_number;
  t.equal((await env.request('POST', '/v1/phone-numbers', { key: a.api_key, body: { phone_number: phone } })).status, 202);

  const twice = await env.request('POST', '/v1/phone-numbers', { key: a.api_key, body: { phone_number: phone } });
  t.equal(twice.status, 409);
  t.equal(twice.body.error.code, 'number_unavailable');
  t.equal(twice.body.error.fields.phone_number, 'is already yours');

  const stolen = await env.request('POST', '/v1/phone-numbers', { key: b.api_key, body: { phone_number: phone } });
  t.equal(stolen.status, 409);
  t.equal(stolen.body.error.code, 'number_unavailable');
  t.equal(stolen.body.error.fields.phone_number, 'is not available');
  t.notOk(JSON.stringify(stolen.body).includes(a.organization_id), 'the holder is not revealed');

  // Concurrent purchases of one number by two organizations: exactly one wins.
  const contested = (await env.request('GET', '/v1/phone-numbers/available?area_code=303&limit=1', { key: a.api_key })).body.data[0].phone_number;
  const race = await Promise.all([a, b, a, b].map((o) => env.request('POST', '/v1/phone-numbers', { key: o.api_key, body: { phone_number: contested } })));
  t.same(race.map((r) => r.status).sort(), [202, 409, 409, 409]);
  const held = await env.db.one(`SELECT count(*)::int AS n FROM phone_numbers WHERE phone_number = $1 AND status <> 'RELEASED'`, [contested]);
  t.equal(held.n, 1);
});

t.test('the available list never offers a held number', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  // Hold most of one area code's inventory window: a random start of 100 lines cannot avoid them all.
  const held = new Set<string>();
  for (let i = 0; i < 30; i++) {
    const r = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { area_code: '404' } });
    t.equal(r.status, 202);
    held.add(r.body.data.phone_number);
  }
  for (let i = 0; i < 20; i++) {
    const avail = await env.request('GET', '/v1/phone-numbers/available?area_code=404&limit=100', { key: org.api_key });
    t.equal(avail.body.data.length, 100);
    const offered = avail.body.data.map((x: any) => x.phone_number);
    t.same(offered.filter((n: string) => held.has(n)), [], `round ${i}`);
  }
  const all = await env.request('GET', '/v1/phone-numbers/available', { key: org.api_key });
  t.equal(all.body.data.length, 20);
  t.ok(new Set(all.body.data.map((x: any) => x.area_code)).size > 1, 'spread over area codes without area_code');
});

t.test('validation: phone_number or area_code, sandbox inventory only', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const cases: [unknown, string][] = [
    [{}, 'phone_number'],
    [{ phone_number: '+14155550100', area_code: '415' }, 'area_code'],
    [{ phone_number: '4155550100' }, 'phone_number'],
    [{ phone_number: '+14158675309' }, 'phone_number'], // not a sandbox number
    [{ area_code: '999' }, 'area_code'],
    [{ area_code: '41' }, 'area_code'],
    [{ name: 'x' }, 'phone_number'],
    [{ area_code: '415', colour: 'red' }, 'colour'],
  ];
  for (const [body, field] of cases) {
    const r = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body });
    t.equal(r.status, 400, JSON.stringify(body));
    t.equal(r.body.error.code, 'validation_error');
    t.ok(r.body.error.fields[field], `${JSON.stringify(body)} -> fields.${field}: ${r.body.error.fields[field]}`);
  }
  for (const id of ['abc', '0', '99999999999999999999']) {
    const r = await env.request('DELETE', `/v1/phone-numbers/${id}`, { key: org.api_key });
    t.equal(r.status, 400, `id ${id}`);
    t.ok(r.body.error.fields.id);
  }
  t.equal((await env.request('GET', '/v1/phone-numbers/123456789', { key: org.api_key })).status, 404);
  const badArea = await env.request('GET', '/v1/phone-numbers/available?area_code=999', { key: org.api_key });
  t.equal(badArea.status, 400);
  t.ok(badArea.body.error.fields.area_code);
  const n = await env.db.one('SELECT count(*)::int AS n FROM phone_numbers WHERE organization_id = $1', [org.organization_id]);
  t.equal(n.n, 0, 'nothing half-written');
});

t.test('scopes and isolation: phone_numbers:write to buy and release; another organization gets 404', async (t) => {
  const reader = await env.bootstrap({ scopes: ['phone_numbers:read'], numbers: 1 });
  const r = await env.request('POST', '/v1/phone-numbers', { key: reader.api_key, body: { area_code: '415' } });
  t.equal(r.status, 403);
  t.equal(r.body.error.code, 'scope_missing');
  const owner = await env.bootstrap({ numbers: 1 });
  const [row] = await env.db.any('SELECT id FROM phone_numbers WHERE organization_id = $1', [owner.organization_id]);
  const other = await env.bootstrap({ numbers: 0 });
  t.equal((await env.request('DELETE', `/v1/phone-numbers/${row.id}`, { key: other.api_key })).status, 404);
  t.equal((await getNumber(other.api_key, row.id)).status, 404);
  t.equal((await env.request('DELETE', `/v1/phone-numbers/${row.id}`, { key: reader.api_key })).status, 403);
  const still = await env.db.one('SELECT status FROM phone_numbers WHERE id = $1', [row.id]);
  t.equal(still.status, 'ACTIVE');
});

t.test('Idempotency-Key on a purchase replays the 202 instead of a 409', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const headers = { 'idempotency-key': 'buy-once' };
  const a = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { area_code: '206' }, headers });
  const b = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { area_code: '206' }, headers });
  t.equal(a.status, 202);
  t.equal(b.status, 202);
  t.equal(b.headers['idempotency-replay'], 'true');
  t.equal(b.body.data.id, a.body.data.id);
});
