// The Display Identity Record through the real gateway (no workers; review is completed here with the shared
// approveBrand): states and illegal moves, the display-name rule against the APPROVED legal name, lengths, logos
// decoded for real (forged type, 199 x 200, damaged, oversized, 20 MB refused; metadata stripped), the logo URL,
// tenant isolation and scopes.
import sharp from 'sharp';
import t from 'tap';
import { approveBrand, displayNameMatches } from '../../shared/caller-trust/brand/brand.ts';
import { decideVetting } from '../../shared/caller-trust/enterprise/registrations.ts';
import { testEnv, type TestEnv } from '../helpers/env.ts';
import { createRegistration, SIGN } from './helpers.ts';

const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '100' } });
const BRAND = '/v1/caller-trust/brand';

const png = (w: number, h: number) => sharp({ create: { width: w, height: h, channels: 3, background: { r: 200, g: 30, b: 30 } } })
  .withMetadata({ exif: { IFD0: { Copyright: 'exif-marker-should-go' } } }).png().toBuffer();
const jpeg = (w: number, h: number) => sharp({ create: { width: w, height: h, channels: 3, background: 'navy' } }).jpeg().toBuffer();
const logo = (content_type: string, b: Buffer) => ({ content_type, data: b.toString('base64') });

async function approvedOrg(e: TestEnv, legal = 'Acme Dental Group, LLC') {
  const o = await e.bootstrap({ numbers: 1 });
  const id = await createRegistration(e, o.api_key, o.phone_numbers, { legal_name: legal });
  await e.request('POST', `/v1/caller-trust/enterprise/${id}/sign-and-submit`, { key: o.api_key, body: SIGN });
  await decideVetting(e.db, id, null, { status: 'APPROVED', reasons: [] });
  return { ...o, enterpriseId: id };
}

t.test('display-name forms of the legal name', async (t) => {
  t.ok(displayNameMatches('Acme Dental Group, LLC', 'Acme Dental Group, LLC'));
  t.ok(displayNameMatches('ACME DENTAL GROUP', 'Acme Dental Group, LLC'));
  t.ok(displayNameMatches('Acme Dental Group LLC', 'Acme Dental Group, L.L.C.'));
  t.ok(displayNameMatches('Globex', 'Globex Corp.'));
  t.ok(displayNameMatches('ROLLOUT CO', 'Rollout Co, Inc.'), 'a name ending in Co keeps it');
  t.notOk(displayNameMatches('Rollout', 'Rollout Co, Inc.'), 'one suffix is dropped, not two');
  t.notOk(displayNameMatches('Acme Dental', 'Acme Dental Group, LLC'));
  t.notOk(displayNameMatches('Acme Dental Group Inc', 'Acme Dental Group, LLC'), 'another suffix is another name');
  t.notOk(displayNameMatches('Best Deals', 'Acme Dental Group, LLC'));
});

t.test('draft -> submitted -> approved, with the 409s of each state', async (t) => {
  const o = await env.bootstrap({ numbers: 1 });
  const key = o.api_key;
  t.equal((await env.request('GET', BRAND, { key })).status, 404, 'none before the first PUT');
  t.equal((await env.request('POST', `${BRAND}/submit`, { key })).status, 404);
  const p = await env.request('PUT', BRAND, { key, body: { display_name: 'Acme Dental Group', call_reason: 'Appointment reminders' } });
  t.equal(p.status, 200);
  t.match(p.body.data, { status: 'draft', display_name: 'Acme Dental Group', call_reason: 'Appointment reminders', logo: null, networks: [] });

  const none = await env.request('POST', `${BRAND}/submit`, { key });
  t.equal(none.status, 409, 'no enterprise registration');
  t.equal(none.body.error.code, 'enterprise_not_approved');
  t.match(none.body.error.message, /has none/);
  const id = await createRegistration(env, key, o.phone_numbers);
  await env.request('POST', `/v1/caller-trust/enterprise/${id}/sign-and-submit`, { key, body: SIGN });
  const pending = await env.request('POST', `${BRAND}/submit`, { key });
  t.equal(pending.status, 409);
  t.equal(pending.body.error.code, 'enterprise_not_approved');
  t.match(pending.body.error.message, /is PENDING_VETTING/);
  await decideVetting(env.db, id, null, { status: 'APPROVED', reasons: [] });

  const incomplete = await env.request('POST', `${BRAND}/submit`, { key });
  t.equal(incomplete.status, 400);
  t.same(Object.keys(incomplete.body.error.fields), ['logo'], 'names the missing logo');
  const wrong = await env.request('PUT', BRAND, { key, body: { display_name: 'Best Dental Deals' } });
  t.equal(wrong.status, 400);
  t.match(wrong.body.error.fields.display_name, /Acme Dental Group, LLC/);
  const l = await env.request('PUT', BRAND, { key, body: { logo: logo('image/png', await png(256, 256)) } });
  t.equal(l.status, 200);
  t.equal(l.body.data.display_name, 'Acme Dental Group', 'omitted fields stay');

  const s = await env.request('POST', `${BRAND}/submit`, { key });
  t.equal(s.status, 200);
  t.equal(s.body.data.status, 'submitted');
  t.equal(s.body.data.enterprise_id, id);
  t.same(s.body.data.networks.map((n: { network: string; status: string }) => `${n.network}:${n.status}`), ['ATT:pending', 'TMOBILE:pending', 'VERIZON:pending']);
  t.ok(s.body.data.submitted_at);
  for (const [m, p2, body] of [['PUT', BRAND, { call_reason: 'x' }], ['POST', `${BRAND}/submit`, undefined]] as const) {
    const r = await env.request(m, p2, { key, body });
    t.equal(r.status, 409, `submitted: ${m} is 409`);
    t.equal(r.body.error.code, 'state_conflict');
    t.same(r.body.error.fields, { entity: 'brand', status: 'submitted' });
    t.match(r.body.error.message, /is submitted/);
  }
  const round = (await env.db.one('SELECT review_round FROM brand_identities WHERE organization_id = $1', [o.organization_id])).review_round;
  t.equal(await approveBrand(env.db, o.organization_id, round + 1), null, 'another round is not approved');
  t.equal((await approveBrand(env.db, o.organization_id, round))?.status, 'approved');
  const a = (await env.request('GET', BRAND, { key })).body.data;
  t.equal(a.status, 'approved');
  t.ok(a.approved_at);
  const again = await env.request('POST', `${BRAND}/submit`, { key });
  t.equal(again.status, 409);
  t.match(again.body.error.message, /is approved/);
  const edit = await env.request('PUT', BRAND, { key, body: { call_reason: 'Billing questions' } });
  t.match(edit.body.data, { status: 'draft', call_reason: 'Billing questions', networks: [], approved_at: null }, 'a change needs a new review');
});

t.test('field validation', async (t) => {
  const o = await env.bootstrap({ numbers: 1 });
  const bad = async (body: unknown, field: string) => {
    const r = await env.request('PUT', BRAND, { key: o.api_key, body });
    t.equal(r.status, 400, `${field}: 400`);
    t.ok(r.body.error?.fields?.[field], `names ${field} (${JSON.stringify(r.body.error?.fields)})`);
  };
  await bad({ display_name: 'x'.repeat(65) }, 'display_name');
  await bad({ display_name: '   ' }, 'display_name');
  await bad({ call_reason: 'y'.repeat(121) }, 'call_reason');
  await bad({ logo: { content_type: 'image/gif', data: 'R0lGODlhAQABAAAAACw=' } }, 'logo');
  await bad({ logo: { content_type: 'image/png', data: '***' } }, 'logo');
  await bad({ logo: { content_type: 'image/png', data: '*********' } }, 'logo.data');
  await bad({ colour: 'red' }, 'colour');
  t.equal((await env.request('PUT', BRAND, { key: o.api_key, body: {} })).status, 400);
  t.equal((await env.request('GET', BRAND, { key: o.api_key })).status, 404, 'nothing written');
  const ok = await env.request('PUT', BRAND, { key: o.api_key, body: { display_name: 'x'.repeat(64), call_reason: 'y'.repeat(120) } });
  t.equal(ok.status, 200, '64 and 120 characters are accepted');
});

t.test('logos are decoded for real: forged, too small, not square, damaged and oversized files are refused', async (t) => {
  const o = await env.bootstrap({ numbers: 1 });
  const put = (l: unknown) => env.request('PUT', BRAND, { key: o.api_key, body: { logo: l } });
  const refused = async (l: unknown, why: RegExp | string, what: string) => {
    const r = await put(l);
    t.equal(r.status, 400, `${what}: 400`);
    t.equal(r.body.error?.code, 'validation_error');
    t.match(JSON.stringify(r.body.error?.fields ?? {}), why, `${what}: ${JSON.stringify(r.body.error?.fields)}`);
  };
  const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const j = await jpeg(300, 300);
  await refused(logo('image/png', Buffer.concat([PNG_SIGNATURE, j])), /logo\.data.*not a decodable PNG/, 'a PNG header on a JPEG body');
  await refused(logo('image/png', Buffer.concat([PNG_SIGNATURE, j.subarray(8)])), /logo\.data/, 'a JPEG with its first bytes replaced by the PNG signature');
  await refused(logo('image/png', j), /must be PNG \(the bytes are jpeg\)/, 'a JPEG declared as PNG');
  await refused(logo('image/png', await png(199, 200)), /square/, '199 x 200');
  await refused(logo('image/png', await png(199, 199)), /at least 200 x 200/, '199 x 199');
  const good = await png(300, 300);
  await refused(logo('image/png', good.subarray(0, Math.floor(good.length / 2))), /logo\.data/, 'a truncated PNG');
  const noisy = await sharp(Buffer.from(Array.from({ length: 450 * 450 * 3 }, (_, i) => (i * 7919) % 251)), { raw: { width: 450, height: 450, channels: 3 } }).png({ compressionLevel: 0 }).toBuffer();
  t.ok(noisy.length > 512 * 1024 && noisy.length * 4 / 3 < 1024 * 1024, 'a file over the logo cap but under the body limit');
  await refused(logo('image/png', noisy), /exceeds/, 'over the logo cap');
  const twenty = await env.request('PUT', BRAND, { key: o.api_key, body: { logo: logo('image/png', Buffer.alloc(20 * 1024 * 1024, 7)) } });
  t.equal(twenty.status, 400, 'a 20 MB file');
  t.ok(twenty.body.error?.fields?.body, 'refused at the body limit');
  t.equal((await env.request('GET', BRAND, { key: o.api_key })).status, 404, 'nothing stored');

  const p = await put(logo('image/png', await png(256, 256)));
  t.equal(p.status, 200);
  const lg = p.body.data.logo;
  t.match(lg, { content_type: 'image/png', width: 256, height: 256 });
  const u = new URL(lg.url);
  t.equal(u.pathname, '/v1/caller-trust/brand/logo');
  const got = await env.request('GET', u.pathname + u.search, { key: o.api_key });
  t.equal(got.status, 200);
  t.equal(got.headers['content-type'], 'image/png');
  t.equal(got.raw.length, lg.size_bytes);
  const meta = await sharp(got.raw).metadata();
  t.match(meta, { format: 'png', width: 256, height: 256 });
  t.equal(meta.exif, undefined, 'metadata stripped');
  t.notOk(got.raw.includes('exif-marker-should-go'));

  const big = await put(logo('image/jpeg', await jpeg(1000, 1000)));
  t.match(big.body.data.logo, { width: 512, height: 512 }, 'stored at most 512 px a side');
  const webp = await put(logo('image/webp', await sharp({ create: { width: 200, height: 200, channels: 3, background: 'green' } }).webp().toBuffer()));
  t.equal(webp.status, 200, 'WebP 200 x 200 accepted');
  t.match(webp.body.data.logo, { width: 200 });
  const removed = await put(null);
  t.equal(removed.body.data.logo, null);
  t.equal((await env.request('GET', '/v1/caller-trust/brand/logo', { key: o.api_key })).status, 404);
});

t.test('tenant isolation and scopes', async (t) => {
  const a = await approvedOrg(env);
  const b = await env.bootstrap({ numbers: 1 });
  await env.request('PUT', BRAND, { key: a.api_key, body: { display_name: 'Acme Dental Group', call_reason: 'Reminders', logo: logo('image/png', await png(220, 220)) } });
  t.equal((await env.request('GET', BRAND, { key: b.api_key })).status, 404, 'another organization sees none');
  t.equal((await env.request('GET', `${BRAND}/logo`, { key: b.api_key })).status, 404);
  const bs = await env.request('POST', `${BRAND}/submit`, { key: b.api_key });
  t.equal(bs.status, 404);
  await env.request('PUT', BRAND, { key: b.api_key, body: { display_name: 'Acme Dental Group' } });
  const bsub = await env.request('POST', `${BRAND}/submit`, { key: b.api_key });
  t.equal(bsub.body.error.code, 'enterprise_not_approved', 'another organization\'s approval does not count');
  t.equal((await env.request('GET', BRAND, { key: a.api_key })).body.data.call_reason, 'Reminders', 'untouched');

  const ro = await env.createKey({ organizationId: a.organization_id, userId: null, scopes: ['brand:read'] });
  const wo = await env.createKey({ organizationId: a.organization_id, userId: null, scopes: ['brand:write', 'caller_trust:read', 'caller_trust:write'] });
  for (const [m, p, k] of [['GET', BRAND, wo], ['GET', `${BRAND}/logo`, wo], ['PUT', BRAND, ro], ['POST', `${BRAND}/submit`, ro]] as const) {
    const r = await env.request(m, p, { key: k.apiKey, body: m === 'PUT' ? { call_reason: 'x' } : undefined });
    t.equal(r.status, 403, `${m} ${p} without its scope`);
    t.equal(r.body.error?.code, 'scope_missing');
  }
  t.equal((await env.request('GET', BRAND, { key: ro.apiKey })).status, 200);
  t.equal((await env.request('POST', `${BRAND}/submit`, { key: wo.apiKey })).status, 200, 'brand:write submits');
});
