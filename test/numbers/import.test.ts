// Numbers from the trunk: the operator CLI (`admin number import`, run as a child process) and the owners' route
// POST /v1/phone-numbers/import on a CARRIER=sip gateway; per-number results, idempotent, E.164 checked, repeats and
// batch size refused with fields (nothing written), a number held by another organization refused with
// number_unavailable, scopes and organizations kept apart, and the sandbox carrier's 409. Imported numbers then enter
// Number Health and are released like bought ones (calls from one over SIPp: test/sip/sigkill.test.ts).
import t from 'tap';
import { runAdmin } from '../helpers/admin-cli.ts';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t, { env: { CARRIER: 'sip', SIP_TRUNK_URI: 'sip:127.0.0.1:5070', SIP_LISTEN: '127.0.0.1:0' } });
const importAs = (key: string, body: unknown, headers?: Record<string, string>) =>
  env.request('POST', '/v1/phone-numbers/import', { key, body, headers });
const heldBy = (n: string) => env.db.oneOrNone(`SELECT organization_id, source, provider, status FROM phone_numbers WHERE phone_number = $1 AND status <> 'RELEASED'`, [n]);
const countRows = async (org: string) => (await env.db.one('SELECT count(*)::int AS n FROM phone_numbers WHERE organization_id = $1', [org])).n as number;

t.test('API: numbers become ACTIVE imported numbers, one result each; importing again changes nothing', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const numbers = ['+14155550100', '+442071838750'];
  const r = await importAs(org.api_key, { numbers, name: 'Trunk DIDs' });
  t.equal(r.status, 200, r.text);
  t.same(r.body.meta, { imported: 2, already_held: 0, refused: 0 });
  t.same(r.body.data.map((x: any) => [x.phone_number, x.result]), [[numbers[0], 'imported'], [numbers[1], 'imported']]);
  const n = r.body.data[0].number;
  t.match(n, { phone_number: numbers[0], status: 'ACTIVE', is_active: true, source: 'imported', provider: 'sip', name: 'Trunk DIDs',
    organization_id: org.organization_id, user_id: org.user_id, area_code: '415', iso_country: 'US' });
  t.ok(n.activated_at, 'active at once');
  t.ok(n.reputation_enrolled_at, 'enrolled in reputation monitoring like a bought number');
  t.equal(r.body.data[1].number.iso_country, 'GB');

  const again = await importAs(org.api_key, { numbers });
  t.equal(again.status, 200);
  t.same(again.body.meta, { imported: 0, already_held: 2, refused: 0 }, 'a repeat is a no-op');
  t.equal(again.body.data[0].number.id, n.id);
  t.equal(await countRows(org.organization_id), 2, 'no second row');

  const list = await env.request('GET', '/v1/phone-numbers', { key: org.api_key });
  t.same(list.body.data.map((x: any) => [x.phone_number, x.source]).sort(), [[numbers[1], 'imported'], [numbers[0], 'imported']].sort());
  const events = await env.db.any(`SELECT data FROM events WHERE organization_id = $1 AND event_type = 'number_purchased' ORDER BY id`, [org.organization_id]);
  t.same(events.map((e) => e.data.phone_number), numbers, 'number_purchased once per imported number');

  // Number Health takes it as a set member, like a bought number.
  const set = await env.request('POST', '/v1/number-health/sets', { key: org.api_key, body: { name: 'Trunk', members: [{ phone_id: n.id }] } });
  t.equal(set.status, 201, set.text);
  // Released like a bought number, then importable again.
  const del = await env.request('DELETE', `/v1/phone-numbers/${n.id}`, { key: org.api_key });
  t.equal(del.body.data.status, 'RELEASED');
  const back = await importAs(org.api_key, { numbers: [numbers[0]] });
  t.equal(back.body.data[0].result, 'imported');
  t.not(back.body.data[0].number.id, n.id, 'a new holding; the released row stays as history');
});

t.test('API: a number another organization holds is refused with number_unavailable; the others are imported', async (t) => {
  const a = await env.bootstrap({ numbers: 0 });
  const b = await env.bootstrap({ numbers: 1 });
  await importAs(a.api_key, { numbers: ['+13125550111'] });
  const r = await importAs(b.api_key, { numbers: ['+13125550111', '+13125550112', b.phone_numbers[0]] });
  t.equal(r.status, 200);
  t.same(r.body.meta, { imported: 1, already_held: 1, refused: 1 });
  t.same(r.body.data[0], { phone_number: '+13125550111', result: 'refused', error: { code: 'number_unavailable', message: 'This number is held by another organization.' } },
    'no detail of the other organization');
  t.equal(r.body.data[2].number.source, 'purchased', 'its own bought number: already held, still purchased');
  t.equal((await heldBy('+13125550111'))?.organization_id, a.organization_id, 'still the first organization\'s');
  t.equal((await heldBy('+13125550112'))?.organization_id, b.organization_id);
});

t.test('API: bad input answers 400 with fields and writes nothing', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const bad = async (body: unknown, fields: Record<string, unknown>) => {
    const r = await importAs(org.api_key, body);
    t.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
    t.equal(r.body.error.code, 'validation_error');
    t.match(r.body.error.fields, fields);
  };
  await bad({ numbers: ['+14155550120', '4155550121', '+1415555012x'] }, { 'numbers[1]': /E\.164/, 'numbers[2]': /E\.164/ });
  await bad({ numbers: ['+14155550122', '+14155550123', '+14155550122'] }, { 'numbers[2]': 'repeats numbers[0]' });
  await bad({ numbers: [] }, { numbers: String });
  await bad({ numbers: Array.from({ length: 101 }, (_, i) => `+1415555${String(1000 + i)}`) }, { numbers: String });
  await bad({}, { numbers: 'is required' });
  await bad({ numbers: '+14155550124' }, { numbers: String });
  await bad({ numbers: [14155550125] }, { 'numbers[0]': String });
  await bad({ numbers: ['+14155550126'], extra: 1 }, { extra: 'is not a recognized field' });
  await bad({ numbers: ['+14155550127'], name: '' }, { name: String });
  t.equal(await countRows(org.organization_id), 0, 'nothing written');
  const max = await importAs(org.api_key, { numbers: Array.from({ length: 100 }, (_, i) => `+1415555${String(2000 + i)}`) });
  t.equal(max.status, 200, '100 numbers is the limit, allowed');
  t.equal(max.body.meta.imported, 100);
});

t.test('API: the write scope is needed; another organization\'s key sees and changes nothing of it', async (t) => {
  const owner = await env.bootstrap({ numbers: 0 });
  const reader = await env.createKey({ organizationId: owner.organization_id, userId: owner.user_id, scopes: ['phone_numbers:read'] });
  const r = await importAs(reader.apiKey, { numbers: ['+12125550130'] });
  t.equal(r.status, 403);
  t.equal(r.body.error.code, 'scope_missing');
  t.equal(await heldBy('+12125550130'), null, 'nothing imported');
  const mine = await importAs(owner.api_key, { numbers: ['+12125550131'] });
  const other = await env.bootstrap({ numbers: 0 });
  t.equal((await env.request('GET', `/v1/phone-numbers/${mine.body.data[0].number.id}`, { key: other.api_key })).status, 404);
  t.same((await env.request('GET', '/v1/phone-numbers', { key: other.api_key })).body.data, []);
  t.equal((await importAs(other.api_key, { numbers: ['+12125550131'] })).body.data[0].result, 'refused');
  t.equal((await importAs(owner.api_key, {})).status, 400);
  t.equal((await importAs('ol_live_not_a_key', { numbers: ['+12125550132'] })).status, 401);
});

t.test('API: Idempotency-Key replays the first answer', async (t) => {
  const org = await env.bootstrap({ numbers: 0 });
  const headers = { 'idempotency-key': 'import-once' };
  const a = await importAs(org.api_key, { numbers: ['+12065550140'] }, headers);
  const b = await importAs(org.api_key, { numbers: ['+12065550140'] }, headers);
  t.equal(b.headers['idempotency-replay'], 'true');
  t.same(b.body, a.body, 'the same "imported" answer');
});

t.test('CLI: admin number import prints one JSON line with a result per number', async (t) => {
  const a = await env.bootstrap({ numbers: 0 });
  const b = await env.bootstrap({ numbers: 0 });
  await importAs(b.api_key, { numbers: ['+16175550152'] });
  const run = (args: string[]) => runAdmin(env.env, ['number', 'import', ...args], { direct: true });
  const r = await run(['--org', a.organization_id, '--name', 'Main DIDs', '+16175550150', '+16175550151', '+16175550152']);
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  t.match(out, { organization_id: a.organization_id, imported: 2, already_held: 0, refused: 1 });
  t.same(out.results.map((x: any) => x.result), ['imported', 'imported', 'refused']);
  t.equal(out.results[2].error, 'number_unavailable');
  const row = await env.db.one('SELECT * FROM phone_numbers WHERE phone_number = $1', ['+16175550150']);
  t.match(row, { organization_id: a.organization_id, user_id: a.user_id, status: 'ACTIVE', source: 'imported', provider: 'sip', name: 'Main DIDs' });
  t.equal(row.id, out.results[0].id);

  const again = await run(['--org', a.organization_id, '+16175550150']);
  t.match(JSON.parse(again.stdout), { imported: 0, already_held: 1 }, 'run it again: nothing changes');

  const usage = async (args: string[], message: RegExp) => {
    const u = await run(args);
    t.equal(u.code, 2, args.join(' '));
    t.match(u.stderr, message);
    t.equal(u.stdout, '');
  };
  await usage(['--org', a.organization_id, '+16175550160', '6175550161'], /"6175550161" must be an E\.164 number/);
  await usage(['--org', a.organization_id, '+16175550162', '+16175550162'], /"\+16175550162" repeats "\+16175550162"/);
  await usage(['--org', a.organization_id], /numbers must list at least one number/);
  await usage(['+16175550163'], /--org <organization id> is required/);
  await usage(['--org', '00000000-0000-4000-8000-000000000000', '+16175550164'], /no organization/);
  await usage(['--org', a.organization_id, '--bogus', '+16175550165'], /Unknown option/);
  for (const n of ['+16175550160', '+16175550162', '+16175550163', '+16175550164', '+16175550165']) t.equal(await heldBy(n), null, `${n} not written`);
  const help = await runAdmin(env.env, ['help', 'number', 'import'], { direct: true });
  t.match(help.stdout, /admin number import --org <id>/);
});

t.test('with the sandbox carrier the route answers numbers_not_importable', async (t) => {
  const sandbox = await testEnv(t);
  const org = await sandbox.bootstrap({ numbers: 0 });
  const r = await sandbox.request('POST', '/v1/phone-numbers/import', { key: org.api_key, body: { numbers: ['+14155550170'] } });
  t.equal(r.status, 409);
  t.equal(r.body.error.code, 'numbers_not_importable');
  t.match(r.body.error.message, /SIP trunk carrier/);
  t.equal((await sandbox.db.one('SELECT count(*)::int AS n FROM phone_numbers WHERE organization_id = $1', [org.organization_id])).n, 0);
});
