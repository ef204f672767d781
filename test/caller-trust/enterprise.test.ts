// Enterprise registration through the real gateway (no workers: vetting decisions are made here by hand, with the
// shared decideVetting and the admin CLI): every move of the state table and every illegal one, validation, the LOA
// PDF read back with pdftotext, the out-of-band upload, tenant isolation and scopes on every route.
import { createHash } from 'node:crypto';
import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import t from 'tap';
import { decideVetting } from '../../shared/caller-trust/enterprise/registrations.ts';
import { testEnv } from '../helpers/env.ts';
import { runAdmin } from '../helpers/admin-cli.ts';
import { createRegistration, pdfText, registrationBody, SIGN } from './helpers.ts';

const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '100' } });
const org = await env.bootstrap({ org: 'Acme Dental', numbers: 3 });
const other = await env.bootstrap({ org: 'Other Co', numbers: 1 });
const key = org.api_key;
const BASE = '/v1/caller-trust/enterprise';
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const count = async () => (await env.db.one('SELECT count(*)::int AS n FROM enterprise_registrations')).n;
const handSigned = await PDFDocument.create();
handSigned.addPage().drawText('Signed by hand');
const PDF_B64 = Buffer.from(await handSigned.save()).toString('base64');
const events = (id: string) => env.db.any(`SELECT data FROM events WHERE event_type = 'enterprise.status.updated' AND data->>'id' = $1 ORDER BY id`, [id]);

t.test('create, read, edit a DRAFT, and the primary registration', async (t) => {
  const c = await env.request('POST', BASE, { key, body: registrationBody(org.phone_numbers.slice(0, 2)) });
  t.equal(c.status, 201);
  const r = c.body.data;
  t.match(r, { status: 'DRAFT', legal_name: 'Acme Dental Group, LLC', ein: '74-1234567', business_type: 'llc',
    phone_numbers: org.phone_numbers.slice(0, 2), rejection_reasons: [], loa: { unsigned: null, signed: null, signature_method: null },
    registered_address: { city: 'Austin', state: 'TX' }, authorized_contact: { email: 'dana@acmedental.example' } });
  t.same((await env.request('GET', `${BASE}/${r.id}`, { key })).body.data, r);
  t.same((await env.request('GET', BASE, { key })).body.data, r, 'the id-less path is the primary registration');

  const p = await env.request('PATCH', `${BASE}/${r.id}`, { key, body: { industry: 'Orthodontics', phone_numbers: org.phone_numbers } });
  t.equal(p.status, 200);
  t.equal(p.body.data.industry, 'Orthodontics');
  t.same(p.body.data.phone_numbers, org.phone_numbers);
  t.equal(p.body.data.legal_name, 'Acme Dental Group, LLC', 'omitted fields stay');
  t.equal((await env.request('GET', `${BASE}/${r.id}`, { key })).body.data.industry, 'Orthodontics');
  t.equal((await env.request('GET', BASE, { key: other.api_key })).status, 404, 'an organization without one: not_found');
});

t.test('validation names each bad field and writes nothing', async (t) => {
  const before = await count();
  const bad = async (over: Record<string, unknown>, field: string | RegExp, numbers = org.phone_numbers) => {
    const r = await env.request('POST', BASE, { key, body: registrationBody(numbers, over) });
    t.equal(r.status, 400, `${JSON.stringify(over).slice(0, 60)}: 400`);
    t.equal(r.body.error?.code, 'validation_error');
    t.ok(Object.keys(r.body.error?.fields ?? {}).some((f) => (typeof field === 'string' ? f === field : field.test(f))),
      `names ${field} (${JSON.stringify(r.body.error?.fields)})`);
    return r;
  };
  await bad({ ein: '741234567' }, 'ein');
  await bad({ ein: '74-123456' }, 'ein');
  const p00 = await bad({ ein: '00-1234567' }, 'ein');
  t.match(p00.body.error.fields.ein, /prefix 00/);
  await bad({ ein: '07-1234567' }, 'ein');
  await bad({ ein: '89-1234567' }, 'ein');
  await bad({ website: 'not a url' }, 'website');
  await bad({ website: 'ftp://acme.example' }, 'website');
  await bad({ business_type: 'empire' }, 'business_type');
  await bad({ legal_name: '' }, 'legal_name');
  await bad({ legal_name: '   ' }, 'legal_name');
  await bad({ registered_address: { line1: 'x', city: 'Austin', state: 'ZZ', postal_code: '78701', country: 'US' } }, 'registered_address.state');
  await bad({ registered_address: { line1: 'x', city: 'Austin', state: 'TX', postal_code: '787', country: 'US' } }, 'registered_address.postal_code');
  await bad({ registered_address: { line1: 'x', city: 'Austin', state: 'TX', postal_code: '78701', country: 'CA' } }, 'registered_address.country');
  await bad({ authorized_contact: { name: 'D', title: 'CEO', email: 'nope', phone: '+15125550100' } }, 'authorized_contact.email');
  await bad({ authorized_contact: { name: 'D', title: 'CEO', email: 'd@x.example', phone: '5550100' } }, 'authorized_contact.phone');
  await bad({}, 'phone_numbers', []);
  await bad({}, 'phone_numbers', [org.phone_numbers[0], org.phone_numbers[0]]);
  const foreign = await bad({}, 'phone_numbers', [org.phone_numbers[0], other.phone_numbers[0]]);
  t.match(foreign.body.error.fields.phone_numbers, other.phone_numbers[0], 'names the number not held');
  await bad({ colour: 'blue' }, 'colour');
  const missing = await env.request('POST', BASE, { key, body: { legal_name: 'Acme' } });
  t.match(missing.body.error.fields, { ein: 'is required', website: 'is required', phone_numbers: 'is required' });
  t.equal(await count(), before, 'nothing written');

  const id = await createRegistration(env, key, org.phone_numbers);
  const p = await env.request('PATCH', `${BASE}/${id}`, { key, body: { ein: '96-1234567' } });
  t.equal(p.status, 400);
  t.ok(p.body.error.fields.ein);
  t.equal((await env.request('PATCH', `${BASE}/${id}`, { key, body: {} })).status, 400, 'an empty PATCH');
  t.equal((await env.request('GET', `${BASE}/${id}`, { key })).body.data.ein, '74-1234567', 'unchanged');
});

t.test('the LOA: generated, read back, signed with an audit trail, PENDING_VETTING and its event', async (t) => {
  const id = await createRegistration(env, key, org.phone_numbers);
  t.equal((await env.request('GET', `${BASE}/${id}/loa`, { key })).status, 404, 'no LOA before generate-loa');
  const g = await env.request('POST', `${BASE}/${id}/generate-loa`, { key });
  t.equal(g.status, 200);
  t.equal(g.body.data.status, 'DRAFT');
  const u = g.body.data.loa.unsigned;
  t.match(u.url, new RegExp(`/v1/caller-trust/enterprise/${id}/loa\\?version=unsigned$`));
  const path = new URL(u.url).pathname + new URL(u.url).search;
  const d = await env.request('GET', path, { key });
  t.equal(d.status, 200);
  t.equal(d.headers['content-type'], 'application/pdf');
  t.equal(d.raw.subarray(0, 5).toString(), '%PDF-');
  t.equal(sha(d.raw), u.sha256, 'sha256 of the served bytes');
  t.equal(d.raw.length, u.size_bytes);
  const text = await pdfText(d.raw);
  t.match(text, 'Acme Dental Group, LLC');
  t.match(text, '74-1234567');
  for (const n of org.phone_numbers) t.match(text, n, `covers ${n}`);
  t.match(text, 'Letter of Authorization');
  t.match(text, /authorizes Openline Test Telecom, Inc\., 1 Test Plaza/, 'names the party it authorizes (PLATFORM_LEGAL_NAME)');
  t.match(text, /Signature:/);
  t.match(text, /Name:/);
  t.notMatch(text, /Audit trail/, 'not signed yet');
  t.equal((await PDFDocument.load(d.raw)).getPageCount() >= 2, true, 'letter and signature page');

  const bad = async (body: Record<string, unknown>, field: string) => {
    const r = await env.request('POST', `${BASE}/${id}/sign-and-submit`, { key, body });
    t.equal(r.status, 400, `${field}: 400`);
    t.ok(r.body.error?.fields?.[field], `names ${field} (${JSON.stringify(r.body.error?.fields)})`);
  };
  await bad({ ...SIGN, consent: false }, 'consent');
  await bad({ signer_name: 'x', signer_title: 'y', typed_signature: 'x' }, 'consent');
  await bad({ ...SIGN, typed_signature: undefined }, 'typed_signature');
  await bad({ ...SIGN, drawn_signature_png: Buffer.from('x'.repeat(40)).toString('base64') }, 'drawn_signature_png');
  await bad({ signer_name: 'D', signer_title: 'CEO', signer_email: 'd@x.example', consent: true, drawn_signature_png: 'not base64!!' }, 'drawn_signature_png');
  const jpeg = await sharp({ create: { width: 300, height: 80, channels: 3, background: 'white' } }).jpeg().toBuffer();
  await bad({ signer_name: 'D', signer_title: 'CEO', signer_email: 'd@x.example', consent: true, drawn_signature_png: jpeg.toString('base64') }, 'drawn_signature_png');
  t.equal((await env.request('GET', `${BASE}/${id}`, { key })).body.data.status, 'DRAFT', 'still a draft');

  const s = await env.request('POST', `${BASE}/${id}/sign-and-submit`, { key, body: SIGN, headers: { 'x-forwarded-for': '203.0.113.7' } });
  t.equal(s.status, 200);
  t.equal(s.body.data.status, 'PENDING_VETTING');
  t.equal(s.body.data.loa.signature_method, 'in_app');
  t.equal(s.body.data.loa.unsigned.sha256, u.sha256, 'the letter generated before is the one signed');
  t.ok(s.body.data.submitted_at);
  const signed = await env.request('GET', `${BASE}/${id}/loa?version=signed`, { key });
  t.equal(signed.headers['content-type'], 'application/pdf');
  t.same(signed.raw, (await env.request('GET', `${BASE}/${id}/loa`, { key })).raw, 'the default is the signed one');
  const st = await pdfText(signed.raw);
  t.match(st, 'Acme Dental Group, LLC');
  t.match(st, '74-1234567');
  for (const n of org.phone_numbers) t.match(st, n);
  t.match(st, /Signature: Dana Q\. Ruiz/, 'the typed signature in the block');
  t.match(st, /Name: Dana Ruiz/);
  t.match(st, /Title: Chief Executive Officer/);
  t.match(st, /Audit trail/);
  t.match(st, /Signed at [A-Z][a-z]+ \d{1,2}, \d{4}, \d\d:\d\d:\d\d UTC/);
  t.match(st, /Signer Dana Ruiz/);
  t.match(st, /Client address 127\.0\.0\.1/);
  t.match(st, /Forwarded for \(claimed\) 203\.0\.113\.7/);
  t.match(st, `Unsigned document SHA-256 ${sha(d.raw)}`, 'the SHA-256 of the unsigned document');
  const audit = await env.db.one(`SELECT audit FROM enterprise_loas WHERE registration_id = $1 AND version = 'signed'`, [id]);
  t.match(audit.audit, { signer_name: 'Dana Ruiz', signer_email: SIGN.signer_email, signature_kind: 'typed', client_address: '127.0.0.1', unsigned_sha256: sha(d.raw) });

  const ev = await events(id);
  t.equal(ev.length, 1);
  t.same(Object.keys(ev[0].data).sort(), ['id', 'occurred_at', 'previous_status', 'reasons', 'status']);
  t.match(ev[0].data, { id, status: 'PENDING_VETTING', previous_status: 'DRAFT', reasons: [] });
});

t.test('every illegal move answers 409 naming the current status', async (t) => {
  const id = await createRegistration(env, key, org.phone_numbers);
  const moves: [string, string, unknown][] = [
    ['PATCH', `${BASE}/${id}`, { industry: 'x' }], ['DELETE', `${BASE}/${id}`, undefined],
    ['POST', `${BASE}/${id}/generate-loa`, undefined], ['POST', `${BASE}/${id}/sign-and-submit`, SIGN],
    ['POST', `${BASE}/${id}/submit`, { signed_loa_pdf: PDF_B64 }], ['POST', `${BASE}/${id}/resign`, SIGN],
  ];
  const allowed: Record<string, string[]> = {
    DRAFT: ['PATCH', 'DELETE', 'generate-loa', 'sign-and-submit', 'submit'],
    PENDING_VETTING: [],
    REJECTED: ['DELETE', 'generate-loa', 'submit', 'resign'],
    APPROVED: [],
  };
  const check = async (status: string) => {
    for (const [m, p, body] of moves) {
      const name = m === 'POST' ? p.split('/').pop()! : m;
      if (allowed[status].includes(name)) continue;
      const r = await env.request(m, p, { key, body });
      t.equal(r.status, 409, `${status}: ${name} is 409`);
      t.equal(r.body.error?.code, 'state_conflict');
      t.same(r.body.error?.fields, { entity: 'enterprise_registration', status }, `${status}: ${name} names the entity and status`);
      t.match(r.body.error?.message, `is ${status}`, `${status}: ${name} names the current status`);
    }
  };
  t.equal((await env.request('POST', `${BASE}/${id}/resign`, { key, body: SIGN })).status, 409, 'DRAFT: resign is 409');
  t.equal((await env.request('POST', `${BASE}/${id}/sign-and-submit`, { key, body: SIGN })).body.data.status, 'PENDING_VETTING');
  await check('PENDING_VETTING');
  t.ok(await decideVetting(env.db, id, null, { status: 'REJECTED', reasons: ['ein_mismatch: no match'] }));
  const rej = (await env.request('GET', `${BASE}/${id}`, { key })).body.data;
  t.equal(rej.status, 'REJECTED');
  t.same(rej.rejection_reasons, ['ein_mismatch: no match']);
  t.ok(rej.decided_at);
  await check('REJECTED');
  t.equal(await decideVetting(env.db, id, null, { status: 'APPROVED', reasons: [] }), null, 'a decided registration is not decided again');

  // REJECTED -> resign (a drawn signature, with a correction) -> PENDING_VETTING -> APPROVED
  const png = await sharp({ create: { width: 400, height: 100, channels: 4, background: { r: 0, g: 0, b: 80, alpha: 1 } } })
    .withMetadata({ exif: { IFD0: { Copyright: 'secret-exif-marker' } } }).png().toBuffer();
  const rs = await env.request('POST', `${BASE}/${id}/resign`, { key, body: {
    signer_name: 'Dana Ruiz', signer_title: 'CEO', signer_email: 'dana@acmedental.example', drawn_signature_png: png.toString('base64'), consent: true,
    changes: { ein: '74-7654321' } } });
  t.equal(rs.status, 200);
  t.equal(rs.body.data.status, 'PENDING_VETTING');
  t.equal(rs.body.data.ein, '74-7654321');
  t.same(rs.body.data.rejection_reasons, [], 'reasons cleared');
  const st = await pdfText((await env.request('GET', `${BASE}/${id}/loa?version=signed`, { key })).raw);
  t.match(st, '74-7654321', 'the new letter carries the corrected EIN');
  t.match(st, /Signature drawn image/);
  t.notMatch(st, /secret-exif-marker/);
  const round = (await env.db.one('SELECT vetting_round FROM enterprise_registrations WHERE id = $1', [id])).vetting_round;
  t.equal(round, 2);
  t.equal(await decideVetting(env.db, id, 1, { status: 'APPROVED', reasons: [] }), null, 'a decision for an older round is ignored');
  t.equal((await decideVetting(env.db, id, 2, { status: 'APPROVED', reasons: [] }))?.status, 'APPROVED');
  await check('APPROVED');
  t.same((await events(id)).map((e) => `${e.data.previous_status}>${e.data.status}`),
    ['DRAFT>PENDING_VETTING', 'PENDING_VETTING>REJECTED', 'REJECTED>PENDING_VETTING', 'PENDING_VETTING>APPROVED']);
  t.same((await events(id))[1].data.reasons, ['ein_mismatch: no match']);
  const acct = await env.request('GET', '/v1/account', { key });
  t.equal(acct.body.data.footprint.own_brand_enterprise, true, 'APPROVED shows on the account snapshot');
  const newer = await createRegistration(env, key, org.phone_numbers);
  t.equal((await env.request('GET', BASE, { key })).body.data.id, id, 'the APPROVED one stays primary over a newer draft');
  t.equal((await env.request('DELETE', `${BASE}/${newer}`, { key })).status, 204);
});

t.test('concurrent sign-and-submit: one wins, the other is a 409; an Idempotency-Key replays', async (t) => {
  const id = await createRegistration(env, key, org.phone_numbers);
  const rs = await Promise.all([1, 2, 3].map(() => env.request('POST', `${BASE}/${id}/sign-and-submit`, { key, body: SIGN })));
  t.same(rs.map((r) => r.status).sort(), [200, 409, 409]);
  t.equal((await events(id)).length, 1, 'one status change, one event');
  t.equal((await env.db.one('SELECT vetting_round FROM enterprise_registrations WHERE id = $1', [id])).vetting_round, 1);

  const b = await createRegistration(env, key, org.phone_numbers);
  const headers = { 'idempotency-key': `sign-${b}` };
  const first = await env.request('POST', `${BASE}/${b}/sign-and-submit`, { key, body: SIGN, headers });
  const again = await env.request('POST', `${BASE}/${b}/sign-and-submit`, { key, body: SIGN, headers });
  t.equal(first.status, 200);
  t.equal(again.status, 200, 'the replay answers what the first answered');
  t.same(again.body, first.body);
  t.equal((await events(b)).length, 1, 'no second move');
});

t.test('DELETE a DRAFT and a REJECTED registration', async (t) => {
  const a = await createRegistration(env, key, org.phone_numbers);
  t.equal((await env.request('DELETE', `${BASE}/${a}`, { key })).status, 204);
  t.equal((await env.request('GET', `${BASE}/${a}`, { key })).status, 404);
  t.equal((await env.request('DELETE', `${BASE}/${a}`, { key })).status, 404);
  t.ok((await env.db.one('SELECT deleted_at FROM enterprise_registrations WHERE id = $1', [a])).deleted_at, 'kept as history');
  const b = await createRegistration(env, key, org.phone_numbers);
  await env.request('POST', `${BASE}/${b}/sign-and-submit`, { key, body: SIGN });
  await decideVetting(env.db, b, null, { status: 'REJECTED', reasons: ['x: y'] });
  t.equal((await env.request('DELETE', `${BASE}/${b}`, { key })).status, 204);
});

t.test('submit: an LOA signed out of band, checked to be a PDF and size-capped; the id-less forms', async (t) => {
  const o = await env.bootstrap({ org: 'Upload Co', numbers: 1 });
  await createRegistration(env, o.api_key, o.phone_numbers, { legal_name: 'Upload Co Inc.' });
  const g = await env.request('POST', `${BASE}/generate-loa`, { key: o.api_key });
  t.equal(g.status, 200, 'generate-loa on the primary registration');
  const id = g.body.data.id;
  const up = async (b64: string) => env.request('POST', `${BASE}/submit`, { key: o.api_key, body: { signed_loa_pdf: b64 } });
  const notPdf = await up(Buffer.from('just some text, not a PDF at all').toString('base64'));
  t.equal(notPdf.status, 400);
  t.match(notPdf.body.error.fields.signed_loa_pdf, /not a PDF/);
  const fake = await up(Buffer.from('%PDF-1.7\nthis is not really a pdf\n%%EOF').toString('base64'));
  t.equal(fake.status, 400, 'a PDF header on junk is refused');
  t.match(fake.body.error.fields.signed_loa_pdf, /not a PDF/);
  t.equal((await up('%%%not-base64%%%')).status, 400);
  const big = await up(Buffer.alloc(720 * 1024, 1).toString('base64'));
  t.equal(big.status, 400);
  t.ok(big.body.error.fields.signed_loa_pdf, 'over the cap: names the field');
  const huge = await env.request('POST', `${BASE}/submit`, { key: o.api_key, body: { signed_loa_pdf: 'A'.repeat(2 * 1024 * 1024) } });
  t.equal(huge.status, 400, 'over the body limit');
  t.equal((await env.request('GET', BASE, { key: o.api_key })).body.data.status, 'DRAFT', 'still a draft');

  const hand = await PDFDocument.create();
  hand.addPage().drawText('Signed by hand: Upload Co Inc.');
  const bytes = Buffer.from(await hand.save());
  const s = await up(bytes.toString('base64'));
  t.equal(s.status, 200);
  t.match(s.body.data, { id, status: 'PENDING_VETTING', loa: { signature_method: 'uploaded' } });
  const back = await env.request('GET', `${BASE}/${id}/loa?version=signed`, { key: o.api_key });
  t.same(back.raw, bytes, 'served back byte for byte');
  t.match(await pdfText(back.raw), 'Signed by hand');
  await decideVetting(env.db, id, null, { status: 'REJECTED', reasons: ['loa_unreadable: signature missing'] });
  const again = await env.request('POST', `${BASE}/${id}/submit`, { key: o.api_key, body: { signed_loa_pdf: bytes.toString('base64') } });
  t.equal(again.body.data.status, 'PENDING_VETTING', 'a REJECTED registration can be resubmitted');

  const p = await env.bootstrap({ org: 'Primary Co', numbers: 1 });
  await createRegistration(env, p.api_key, p.phone_numbers);
  const sas = await env.request('POST', `${BASE}/sign-and-submit`, { key: p.api_key, body: SIGN });
  t.equal(sas.body.data.status, 'PENDING_VETTING', 'sign-and-submit on the primary registration');
  const none = await env.bootstrap({ org: 'None Co', numbers: 1 });
  for (const m of ['generate-loa', 'sign-and-submit', 'submit']) {
    const r = await env.request('POST', `${BASE}/${m}`, { key: none.api_key, body: m === 'submit' ? { signed_loa_pdf: bytes.toString('base64') } : m === 'generate-loa' ? undefined : SIGN });
    t.equal(r.status, 404, `${m} without a registration: not_found`);
  }
});

t.test('admin CLI approves and rejects a pending registration by hand', async (t) => {
  const o = await env.bootstrap({ org: 'Admin Co', numbers: 1 });
  const a = await createRegistration(env, o.api_key, o.phone_numbers, { legal_name: 'Admin Co' });
  const admin = (...args: string[]) => runAdmin(env.env, args);
  const early = await admin('enterprise', 'approve', '--id', a);
  t.equal(early.code, 2);
  t.match(early.stderr, /is DRAFT/);
  await env.request('POST', `${BASE}/${a}/sign-and-submit`, { key: o.api_key, body: SIGN });
  t.equal((await admin('enterprise', 'reject', '--id', a)).code, 2, 'reject needs a reason');
  const rj = await admin('enterprise', 'reject', '--id', a, '--reason', 'ein_mismatch: EIN not found', '--reason', 'website_unreachable: no site');
  t.equal(rj.code, 0, rj.stderr);
  t.match(JSON.parse(rj.stdout), { id: a, status: 'REJECTED', reasons: ['ein_mismatch: EIN not found', 'website_unreachable: no site'] });
  const got = (await env.request('GET', `${BASE}/${a}`, { key: o.api_key })).body.data;
  t.same(got.rejection_reasons, ['ein_mismatch: EIN not found', 'website_unreachable: no site']);
  await env.request('POST', `${BASE}/${a}/resign`, { key: o.api_key, body: SIGN });
  const ap = await admin('enterprise', 'approve', '--id', a);
  t.equal(ap.code, 0, ap.stderr);
  t.match(JSON.parse(ap.stdout), { id: a, status: 'APPROVED' });
  t.equal((await env.request('GET', '/v1/account', { key: o.api_key })).body.data.footprint.own_brand_enterprise, true);
  t.equal((await admin('enterprise', 'approve', '--id', a)).code, 2, 'already decided');
  t.equal((await admin('enterprise', 'approve', '--id', 'nope')).code, 2);
  const help = await admin('help', 'enterprise reject');
  t.match(help.stdout, /--reason <text>/);
});

t.test('tenant isolation and scopes on every route', async (t) => {
  const id = await createRegistration(env, key, org.phone_numbers);
  await env.request('POST', `${BASE}/${id}/generate-loa`, { key });
  const routes: [string, string, unknown, 'read' | 'write'][] = [
    ['GET', `${BASE}/${id}`, undefined, 'read'], ['PATCH', `${BASE}/${id}`, { industry: 'x' }, 'write'],
    ['DELETE', `${BASE}/${id}`, undefined, 'write'], ['POST', `${BASE}/${id}/generate-loa`, undefined, 'write'],
    ['POST', `${BASE}/${id}/sign-and-submit`, SIGN, 'write'], ['POST', `${BASE}/${id}/submit`, { signed_loa_pdf: PDF_B64 }, 'write'],
    ['POST', `${BASE}/${id}/resign`, SIGN, 'write'], ['GET', `${BASE}/${id}/loa`, undefined, 'read'],
  ];
  for (const [m, p, body] of routes) {
    const r = await env.request(m, p, { key: other.api_key, body });
    t.equal(r.status, 404, `${m} ${p.replace(id, '{id}')}: another organization gets not_found`);
  }
  t.equal((await env.request('GET', `${BASE}/not-a-uuid`, { key })).status, 404);
  t.equal((await env.request('GET', `${BASE}/${id}`, { key })).body.data.status, 'DRAFT', 'untouched by the other organization');

  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['caller_trust:read'] });
  const wo = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['caller_trust:write'] });
  const all: [string, string, unknown, 'read' | 'write'][] = [...routes, ['GET', BASE, undefined, 'read'], ['POST', BASE, registrationBody(org.phone_numbers), 'write'],
    ['POST', `${BASE}/generate-loa`, undefined, 'write'], ['POST', `${BASE}/sign-and-submit`, SIGN, 'write'],
    ['POST', `${BASE}/submit`, { signed_loa_pdf: PDF_B64 }, 'write']];
  for (const [m, p, body, need] of all) {
    const r = await env.request(m, p, { key: need === 'read' ? wo.apiKey : ro.apiKey, body });
    t.equal(r.status, 403, `${m} ${p.replace(id, '{id}')} without caller_trust:${need}: 403`);
    t.equal(r.body.error?.code, 'scope_missing');
  }
  t.equal((await env.request('GET', `${BASE}/${id}`, { key: ro.apiKey })).status, 200, 'read scope reads');
  t.equal((await env.request('GET', `${BASE}/${id}/loa`, { key: ro.apiKey })).status, 200);
});
