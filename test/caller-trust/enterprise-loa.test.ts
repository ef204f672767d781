// The Letter of Authorization as a letter, read back with poppler (pdftotext per page, pdffonts): it names the party
// it authorizes (PLATFORM_LEGAL_NAME and PLATFORM_LEGAL_ADDRESS), prints labels and dates a person reads, numbers
// every page and prints the registration id on it, draws a typed signature in the embedded script face, and its audit
// trail records the signer's email and the key (and user) that signed. Without the settings no letter is issued.
import { PDFDocument } from 'pdf-lib';
import t from 'tap';
import { loadConfig } from '../../shared/config.ts';
import { testEnv } from '../helpers/env.ts';
import { createRegistration, pdfFonts, pdfText, SIGN } from './helpers.ts';

const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '100',
  PLATFORM_LEGAL_NAME: 'Northwind Voice Networks, Inc.', PLATFORM_LEGAL_ADDRESS: '77 Harbor Road, Floor 3, Portland, OR 97201, USA' } });
const BASE = '/v1/caller-trust/enterprise';
const ISO_TIMESTAMP = /\d{4}-\d\d-\d\dT\d\d:\d\d/;
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const dateOf = (d: Date) => `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}, ${d.getUTCFullYear()}`;
/** The date a request made between `before` and now prints (either side of a midnight in between). */
const printedDate = (before: Date) => new RegExp(`(${dateOf(before)}|${dateOf(new Date())})`);
/** Text with every run of whitespace (line breaks of wrapped values too) as one space. */
const flat = (text: string) => text.replace(/\s+/g, ' ');
const pages = async (pdf: Buffer) => (await PDFDocument.load(pdf)).getPageCount();

async function download(key: string, id: string, version: 'unsigned' | 'signed'): Promise<Buffer> {
  const r = await env.request('GET', `${BASE}/${id}/loa?version=${version}`, { key });
  if (r.status !== 200) throw new Error(`download ${version}: ${r.status} ${r.text}`);
  return r.raw;
}

t.test('the unsigned letter names the platform, reads as a letter and numbers every page', async (t) => {
  // 150 numbers: the letter runs over onto a second page before the signature page.
  const org = await env.bootstrap({ org: 'Acme Letters', numbers: 150 });
  const id = await createRegistration(env, org.api_key, org.phone_numbers);
  const before = new Date();
  t.equal((await env.request('POST', `${BASE}/${id}/generate-loa`, { key: org.api_key })).status, 200);
  const pdf = await download(org.api_key, id, 'unsigned');
  const text = await pdfText(pdf);
  t.match(flat(text), 'authorizes Northwind Voice Networks, Inc., 77 Harbor Road, Floor 3, Portland, OR 97201, USA ("the Provider")',
    'the body names the party it authorizes, with its address');
  t.match(text, /To: Northwind Voice Networks, Inc\.\n\s*77 Harbor Road, Floor 3, Portland, OR 97201, USA/, 'addressed to the platform');
  t.match(text, /From: Acme Dental Group, LLC\n\s*500 Congress Ave, Suite 200, Austin, TX 78701, US/, 'from the business');
  t.match(text, 'Re: Authorization to register and present caller identity for 150 telephone numbers');
  t.notMatch(text, /service provider issuing this letter/);
  t.match(text, /Business type Limited Liability Company/, 'the business type as its label');
  t.match(flat(text), 'a Limited Liability Company with Employer Identification Number 74-1234567');
  t.notMatch(text, /\bllc\b/, 'never the raw value');
  t.match(text, printedDate(before), 'the date as a date');
  t.notMatch(text, ISO_TIMESTAMP, 'no ISO timestamp anywhere');

  const n = await pages(pdf);
  t.ok(n >= 3, `the numbers run onto a second page, then the signature page (${n} pages)`);
  for (let k = 1; k <= n; k++) {
    const page = await pdfText(pdf, k);
    t.match(page, `Page ${k} of ${n}`, `page ${k} is numbered`);
    t.match(page, `Registration ${id}`, `page ${k} names the registration`);
  }
  t.match(flat(await pdfText(pdf, n)), /Signed for and on behalf of Acme Dental Group, LLC \(EIN 74-1234567\), authorizing Northwind Voice Networks, Inc\./);

  const np = await env.bootstrap({ org: 'Charity Letters', numbers: 1 });
  const npId = await createRegistration(env, np.api_key, np.phone_numbers, { legal_name: 'Helping Hands', business_type: 'nonprofit' });
  await env.request('POST', `${BASE}/${npId}/generate-loa`, { key: np.api_key });
  const npText = await pdfText(await download(np.api_key, npId, 'unsigned'));
  t.match(npText, /Business type Nonprofit Organization/);
  t.match(npText, 'for 1 telephone number\n', 'one number, singular');
});

t.test('signed: the typed signature in the embedded script face, dates, page footers and the audit trail', async (t) => {
  const org = await env.bootstrap({ org: 'Acme Signing', numbers: 2 });
  const id = await createRegistration(env, org.api_key, org.phone_numbers);
  const before = new Date();
  const s = await env.request('POST', `${BASE}/${id}/sign-and-submit`, { key: org.api_key, body: { ...SIGN, typed_signature: 'Łukasz Ruiz' } });
  t.equal(s.status, 200, s.text);
  const pdf = await download(org.api_key, id, 'signed');
  const fonts = await pdfFonts(pdf);
  t.ok(fonts.some((f) => /DancingScript/.test(f.name) && f.embedded), `the script face is embedded (${JSON.stringify(fonts)})`);
  const text = await pdfText(pdf);
  t.match(text, /Signature: Łukasz Ruiz/, 'the typed signature, Ł included (from the Latin Extended file)');
  t.match(text, new RegExp(`Date: ${printedDate(before).source}`), 'the signing date as a date');
  t.match(text, 'Email: dana.ruiz@acmedental.example', 'the signer\'s email in the block');
  t.notMatch(text, ISO_TIMESTAMP, 'no ISO timestamp anywhere');

  const n = await pages(pdf);
  const letterPages = n - 1;
  for (let k = 1; k <= letterPages; k++) {
    const page = await pdfText(pdf, k);
    t.match(page, `Page ${k} of ${letterPages}`, `letter page ${k} keeps its number`);
    t.match(page, `Registration ${id}`);
  }
  const trail = flat(await pdfText(pdf, n));
  t.match(trail, 'Audit trail page 1 of 1', 'the audit trail is numbered on its own');
  t.match(trail, `Registration ${id}`);
  t.match(trail, new RegExp(`Signed at ${printedDate(before).source}, \\d\\d:\\d\\d:\\d\\d UTC`));
  t.match(trail, 'Signer email dana.ruiz@acmedental.example');
  t.match(trail, `Signed with API key ${org.api_key.slice(0, 10)}... (id ${org.api_key_id})`);
  t.match(trail, `Key's user owner@acme-signing.example (id ${org.user_id})`);

  const { audit } = await env.db.one(`SELECT audit FROM enterprise_loas WHERE registration_id = $1 AND version = 'signed'`, [id]);
  t.match(audit, { signer_name: 'Dana Ruiz', signer_email: 'dana.ruiz@acmedental.example', credential: 'api_key',
    key_id: org.api_key_id, key_prefix: org.api_key.slice(0, 10), user_id: org.user_id, user_email: 'owner@acme-signing.example' });
  t.match(audit.signed_at, ISO_TIMESTAMP, 'the stored audit keeps the exact moment');

  // A key that belongs to the organization, not a user; a drawn signature.
  const orgKey = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['caller_trust:write', 'caller_trust:read'] });
  const b = await createRegistration(env, orgKey.apiKey, org.phone_numbers);
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
  const sb = await env.request('POST', `${BASE}/${b}/sign-and-submit`, { key: orgKey.apiKey,
    body: { ...SIGN, typed_signature: undefined, drawn_signature_png: png.toString('base64') } });
  t.equal(sb.status, 200, sb.text);
  const bPdf = await download(orgKey.apiKey, b, 'signed');
  t.match(flat(await pdfText(bPdf, await pages(bPdf))), 'Key\'s user none (an organization key, not a user\'s)');
  t.match((await env.db.one(`SELECT audit FROM enterprise_loas WHERE registration_id = $1 AND version = 'signed'`, [b])).audit,
    { key_id: orgKey.apiKeyId, user_id: null, user_email: null, signature_kind: 'drawn' });
});

t.test('signer_email is required and must be an email; nothing is signed without it', async (t) => {
  const org = await env.bootstrap({ org: 'Acme Email', numbers: 1 });
  const id = await createRegistration(env, org.api_key, org.phone_numbers);
  for (const signer_email of [undefined, 'not-an-email']) {
    const r = await env.request('POST', `${BASE}/${id}/sign-and-submit`, { key: org.api_key, body: { ...SIGN, signer_email } });
    t.equal(r.status, 400, `${signer_email}: 400`);
    t.equal(r.body.error?.code, 'validation_error');
    t.ok(r.body.error?.fields?.signer_email, `names signer_email (${JSON.stringify(r.body.error?.fields)})`);
  }
  t.equal((await env.request('GET', `${BASE}/${id}`, { key: org.api_key })).body.data.status, 'DRAFT');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM enterprise_loas WHERE registration_id = $1', [id])).n, 0);
});

t.test('PLATFORM_LEGAL_NAME and PLATFORM_LEGAL_ADDRESS: both or neither, one line each', async (t) => {
  t.equal(loadConfig({}).platformLegal, null, 'unset: null');
  t.same(loadConfig({ PLATFORM_LEGAL_NAME: '  Example Telecom, Inc. ', PLATFORM_LEGAL_ADDRESS: '1 Main St, Austin, TX 78701' }).platformLegal,
    { name: 'Example Telecom, Inc.', address: '1 Main St, Austin, TX 78701' }, 'trimmed');
  t.throws(() => loadConfig({ PLATFORM_LEGAL_NAME: 'Example Telecom, Inc.' }), /PLATFORM_LEGAL_NAME is set but PLATFORM_LEGAL_ADDRESS is not/);
  t.throws(() => loadConfig({ PLATFORM_LEGAL_ADDRESS: '1 Main St' }), /PLATFORM_LEGAL_ADDRESS is set but PLATFORM_LEGAL_NAME is not/);
  t.throws(() => loadConfig({ PLATFORM_LEGAL_NAME: 'x'.repeat(201), PLATFORM_LEGAL_ADDRESS: '1 Main St' }), /PLATFORM_LEGAL_NAME must be at most 200 characters/);
  t.throws(() => loadConfig({ PLATFORM_LEGAL_NAME: 'Example', PLATFORM_LEGAL_ADDRESS: '1 Main St\nAustin' }), /PLATFORM_LEGAL_ADDRESS must be one line/);
});

t.test('without the settings the platform issues no letter: 503 naming them, nothing written', async (t) => {
  const bare = await testEnv(t, { env: { PLATFORM_LEGAL_NAME: '', PLATFORM_LEGAL_ADDRESS: '' } });
  const org = await bare.bootstrap({ org: 'Acme Bare', numbers: 1 });
  const id = await createRegistration(bare, org.api_key, org.phone_numbers);
  for (const [path, body] of [[`${BASE}/${id}/generate-loa`, undefined], [`${BASE}/${id}/sign-and-submit`, SIGN]] as const) {
    const r = await bare.request('POST', path, { key: org.api_key, body });
    t.equal(r.status, 503, `${path.split('/').pop()}: 503`);
    t.equal(r.body.error?.code, 'service_unavailable');
    t.match(r.body.error?.message, /PLATFORM_LEGAL_NAME and PLATFORM_LEGAL_ADDRESS/);
  }
  t.equal((await bare.request('GET', `${BASE}/${id}`, { key: org.api_key })).body.data.status, 'DRAFT', 'still a draft');
  t.equal((await bare.db.one('SELECT count(*)::int AS n FROM enterprise_loas')).n, 0, 'no letter stored');
});
