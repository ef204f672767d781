// CNAM: PATCH /v1/phone-numbers/{id} validates the display name (the CNAM rules), sets cnam_status pending, and
// the spawned workers' registration job (the sandbox provider, delays scaled by SANDBOX_TIME_SCALE) moves it to
// registered or rejected with a reason, as GET /v1/phone-numbers shows. A newer name always wins over a late
// verdict on an older one. Tenancy and scopes.
import t from 'tap';
import { eventually } from '../helpers/env.ts';
import { callEnv } from '../calls/helpers.ts';

const { env } = await callEnv(t);
const org = await env.bootstrap({ org: 'Cnam Co', numbers: 3 });
const other = await env.bootstrap({ org: 'Other Co' });
const key = org.api_key;
const ids = (await env.db.any('SELECT id FROM phone_numbers WHERE organization_id = $1 ORDER BY id', [org.organization_id])).map((r) => Number(r.id));

const patch = (id: number, body: unknown, k = key) => env.request('PATCH', `/v1/phone-numbers/${id}`, { key: k, body });
const listed = async (id: number) => (await env.request('GET', '/v1/phone-numbers', { key })).body.data.find((n: { id: number }) => n.id === id);
const settledCnam = (id: number) => eventually(async () => {
  const n = await listed(id);
  return n.cnam_status !== 'pending' ? n : null;
}, 60_000, 100);

t.test('a valid name goes pending, then registered, as the list shows', async (t) => {
  const r = await patch(ids[0], { cnam_display_name: "Acme Dental" });
  t.equal(r.status, 200, r.text);
  t.match(r.body.data, { id: ids[0], cnam_display_name: 'Acme Dental', cnam_status: 'pending', cnam_rejection_reason: null, status: 'ACTIVE' });
  const n = await settledCnam(ids[0]);
  t.match(n, { cnam_display_name: 'Acme Dental', cnam_status: 'registered', cnam_rejection_reason: null });
  t.equal((await env.request('GET', `/v1/phone-numbers/${ids[0]}`, { key })).body.data.cnam_status, 'registered');

  const same = await patch(ids[0], { cnam_display_name: 'Acme Dental', name: 'Front desk' });
  t.match(same.body.data, { name: 'Front desk', cnam_status: 'registered' }, 'the same name is not submitted again');
  const label = await patch(ids[0], { name: 'Reception' });
  t.match(label.body.data, { name: 'Reception', cnam_display_name: 'Acme Dental', cnam_status: 'registered' }, 'a label change leaves CNAM alone');
  const punct = await patch(ids[0], { cnam_display_name: "O'Neil & Co., -" });
  t.equal(punct.status, 200, 'the documented punctuation is allowed');
  t.match(await settledCnam(ids[0]), { cnam_display_name: "O'Neil & Co., -", cnam_status: 'registered' });
});

t.test('the sandbox rejects reserved words and names without a letter, with a reason', async (t) => {
  const r = await patch(ids[1], { cnam_display_name: 'Metro Police' });
  t.equal(r.status, 200);
  const n = await settledCnam(ids[1]);
  t.equal(n.cnam_status, 'rejected');
  t.match(n.cnam_rejection_reason, /reserved word "POLICE"/);
  const again = await patch(ids[1], { cnam_display_name: 'Metro Police' });
  t.match(again.body.data, { cnam_status: 'pending', cnam_rejection_reason: null }, 'the same name after a rejection is submitted again');
  t.equal((await settledCnam(ids[1])).cnam_status, 'rejected');
  await patch(ids[1], { cnam_display_name: '555 1234' });
  t.match(await settledCnam(ids[1]), { cnam_status: 'rejected', cnam_rejection_reason: /no letter/ });
  await patch(ids[1], { cnam_display_name: 'Policed Goods' });
  t.match(await settledCnam(ids[1]), { cnam_status: 'registered' }, 'a reserved word only as a whole word');
});

t.test('the newest name wins over a verdict on an older one', async (t) => {
  t.equal((await patch(ids[2], { cnam_display_name: 'FBI Tips' })).status, 200);
  t.equal((await patch(ids[2], { cnam_display_name: 'Tips Line' })).status, 200);
  const n = await settledCnam(ids[2]);
  t.match(n, { cnam_display_name: 'Tips Line', cnam_status: 'registered', cnam_rejection_reason: null });
  const row = await env.db.one('SELECT cnam_version FROM phone_numbers WHERE id = $1', [ids[2]]);
  t.equal(row.cnam_version, 2);
});

t.test('the CNAM rules: each bad name is a 400 naming the field; nothing changes', async (t) => {
  const before = await env.db.one('SELECT cnam_display_name, cnam_status, cnam_version FROM phone_numbers WHERE id = $1', [ids[0]]);
  const bad: [unknown, string, RegExp | string][] = [
    [{ cnam_display_name: 'Acme Dental Care' }, 'cnam_display_name', /at most 15 characters \(got 16\)/],
    [{ cnam_display_name: 'Acme@Dental' }, 'cnam_display_name', /only letters, digits, spaces/],
    [{ cnam_display_name: 'Café Lune' }, 'cnam_display_name', /only letters/],
    [{ cnam_display_name: ' Acme' }, 'cnam_display_name', /start or end with a space/],
    [{ cnam_display_name: 'Acme  Dental' }, 'cnam_display_name', /two spaces/],
    [{ cnam_display_name: '' }, 'cnam_display_name', /empty/],
    [{ cnam_display_name: '--' }, 'cnam_display_name', /a letter or a digit/],
    [{ cnam_display_name: 7 }, 'cnam_display_name', /./],
    [{ colour: 'red' }, 'colour', 'is not a recognized field'],
  ];
  for (const [body, field, match] of bad) {
    const r = await patch(ids[0], body);
    t.equal(r.status, 400, JSON.stringify(body));
    t.equal(r.body.error.code, 'validation_error');
    t.match(r.body.error.fields[field], match);
  }
  t.equal((await patch(ids[0], {})).status, 400, 'an empty patch');
  const after = await env.db.one('SELECT cnam_display_name, cnam_status, cnam_version FROM phone_numbers WHERE id = $1', [ids[0]]);
  t.same(after, before);
});

t.test('a bought number registers the caller name derived from the organization once active', async (t) => {
  const buy = await env.request('POST', '/v1/phone-numbers', { key, body: { area_code: '206' } });
  t.equal(buy.status, 202, buy.text);
  t.match(buy.body.data, { status: 'PROVISIONING', cnam_display_name: 'Cnam Co', cnam_status: 'pending' });
  const n = await settledCnam(buy.body.data.id);
  t.match(n, { is_active: true, cnam_display_name: 'Cnam Co', cnam_status: 'registered' });
});

t.test('a released number: 409 naming its status', async (t) => {
  const buy = await env.request('POST', '/v1/phone-numbers', { key, body: { area_code: '312' } });
  t.equal(buy.status, 202, buy.text);
  const id = buy.body.data.id;
  t.equal((await env.request('DELETE', `/v1/phone-numbers/${id}`, { key })).status, 200);
  const r = await patch(id, { cnam_display_name: 'Acme' });
  t.equal(r.status, 409);
  t.equal(r.body.error.code, 'cnam_number_released');
  t.match(r.body.error.message, /RELEASED/);
});

t.test('tenancy and scopes', async (t) => {
  const r = await patch(ids[0], { cnam_display_name: 'Stolen' }, other.api_key);
  t.equal(r.status, 404);
  t.equal((await listed(ids[0])).cnam_display_name !== 'Stolen', true);
  t.equal((await patch(999_999_999, { cnam_display_name: 'Nobody' })).status, 404);
  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['phone_numbers:read', 'voice:write'] });
  const w = await patch(ids[0], { cnam_display_name: 'Acme' }, ro.apiKey);
  t.equal(w.status, 403);
  t.equal(w.body.error.code, 'scope_missing');
});
