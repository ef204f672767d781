// Documents through the real gateway: each accepted type uploaded (multipart and JSON) and read back byte for byte,
// type checks from the bytes, the size limit writing nothing, malformed multipart, list paging and filters, delete
// (row and file), tenant isolation and scopes on every route, attachment to an enterprise registration, Range, and
// the orphan sweep.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import t from 'tap';
import { sweepOrphans } from '../../shared/documents/documents.ts';
import { LocalDocumentStorage } from '../../shared/documents/storage.ts';
import { uuidv7 } from '../../shared/ids.ts';
import { createRegistration } from '../caller-trust/helpers.ts';
import { testEnv } from '../helpers/env.ts';

const MAX = 100_000;
const dir = await mkdtemp(join(tmpdir(), 'ol-documents-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const env = await testEnv(t, { env: { DOCUMENTS_DIR: dir, DOCUMENTS_MAX_BYTES: String(MAX) } });
const org = await env.bootstrap({ org: 'Acme Dental', numbers: 2 });
const other = await env.bootstrap({ org: 'Other Co', numbers: 1 });
const key = org.api_key;
const keyWith = async (...scopes: Parameters<typeof env.createKey>[0]['scopes']) =>
  (await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes })).apiKey;

const pdfDoc = await PDFDocument.create();
pdfDoc.addPage().drawText('Articles of organization');
const PDF = Buffer.from(await pdfDoc.save());
const PNG = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#c33' } }).png().toBuffer();
const JPEG = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#3c3' } }).jpeg().toBuffer();
const TEXT = Buffer.from('Opening hours: Mon–Fri 8:00–17:00.\nWe speak English and Español.\n');
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

type Part = { name: string; value: string } | { name: string; filename: string; type?: string; data: Buffer };
function multipart(parts: Part[], boundary = `----olt${Math.random().toString(16).slice(2)}`) {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const head = 'data' in p
      ? `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\nContent-Type: ${p.type ?? 'application/octet-stream'}\r\n\r\n`
      : `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n`;
    chunks.push(Buffer.from(head), 'data' in p ? p.data : Buffer.from(p.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { rawBody: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}
const upload = (k: string, file: { filename: string; type?: string; data: Buffer }, fields: Record<string, string> = {}) =>
  env.request('POST', '/v1/documents', { key: k, ...multipart([{ name: 'file', ...file }, ...Object.entries(fields).map(([name, value]) => ({ name, value }))]) });
const rows = async () => (await env.db.one('SELECT count(*)::int AS n FROM documents')).n;
const files = async () => (await readdir(dir).catch(() => [])).length;

t.test('each accepted type: uploaded, described, read back byte-identical', async (t) => {
  const cases: [string, Buffer, string, string][] = [
    ['articles.pdf', PDF, 'application/pdf', 'application/pdf'],
    ['logo.png', PNG, 'image/png', 'image/png'],
    ['photo.jpg', JPEG, 'image/jpeg', 'image/jpeg'],
    ['hours.txt', TEXT, 'text/plain', 'text/plain; charset=utf-8'],
  ];
  for (const [filename, data, type, served] of cases) {
    const r = await upload(key, { filename, data, type: 'application/octet-stream' }, { purpose: 'agent_knowledge' });
    t.equal(r.status, 201, `${filename}: 201 (${r.text.slice(0, 200)})`);
    const d = r.body.data;
    t.match(d, { purpose: 'agent_knowledge', name: filename, content_type: type, size_bytes: data.length, sha256: sha(data),
      registration_id: null, agent_id: null });
    t.equal(d.content_url, `${env.url}/v1/documents/${d.id}/content`);
    t.same((await env.request('GET', `/v1/documents/${d.id}`, { key })).body.data, d, 'read back');
    const c = await env.request('GET', `/v1/documents/${d.id}/content`, { key });
    t.equal(c.status, 200);
    t.equal(c.headers['content-type'], served);
    t.equal(c.headers['x-content-type-options'], 'nosniff');
    t.match(c.headers['content-disposition'], `attachment; filename="${filename}"`);
    t.ok(c.raw.equals(data), `${filename}: byte-identical`);
    t.ok((await readdir(dir)).includes(d.id), 'stored under its id');
  }
});

t.test('a JSON body with content_base64 (the declared type is not trusted)', async (t) => {
  const r = await env.request('POST', '/v1/documents', { key, body: { purpose: 'agent_knowledge', name: 'faq.txt',
    content_base64: TEXT.toString('base64'), content_type: 'application/pdf' } });
  t.equal(r.status, 201);
  t.match(r.body.data, { name: 'faq.txt', content_type: 'text/plain', size_bytes: TEXT.length });
  t.ok((await env.request('GET', `/v1/documents/${r.body.data.id}/content`, { key })).raw.equals(TEXT));
  const bad = await env.request('POST', '/v1/documents', { key, body: { purpose: 'agent_knowledge', content_base64: '***' } });
  t.equal(bad.status, 400);
  t.match(bad.body.error.fields, { content_base64: /base64/ });
  const none = await env.request('POST', '/v1/documents', { key, body: { purpose: 'agent_knowledge' } });
  t.match(none.body.error.fields, { file: /required/ });
});

t.test('the type comes from the bytes: renamed executables, HTML and damaged files are refused, nothing written', async (t) => {
  const before = [await rows(), await files()];
  const elf = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(120, 0)]);
  const exe = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(200, 0x90)]);
  const html = Buffer.from('<!DOCTYPE html>\n<html><body><script>alert(1)</script></body></html>\n');
  const truncated = PDF.subarray(0, PDF.length - 40);
  const fakePng = Buffer.concat([PNG.subarray(0, 8), Buffer.alloc(64, 7)]);
  for (const [label, data, reason] of [['ELF', elf, /ELF executable/], ['EXE', exe, /Windows executable/], ['HTML', html, /HTML/],
    ['truncated PDF', truncated, /truncated/], ['fake PNG', fakePng, /PNG/]] as const) {
    const r = await upload(key, { filename: 'contract.pdf', type: 'application/pdf', data }, { purpose: 'agent_knowledge' });
    t.equal(r.status, 400, `${label}: 400`);
    t.equal(r.body.error.code, 'validation_error');
    t.match(r.body.error.fields.file, reason, `${label}: ${r.body.error.fields?.file}`);
  }
  t.same([await rows(), await files()], before, 'no row, no file');
});

t.test('too large: refused with fields.file, nothing written', async (t) => {
  const before = [await rows(), await files()];
  const big = Buffer.alloc(MAX + 1, 'a');
  const r = await upload(key, { filename: 'big.txt', data: big }, { purpose: 'agent_knowledge' });
  t.equal(r.status, 400);
  t.equal(r.body.error.code, 'validation_error');
  t.match(r.body.error.fields.file, `exceeds the ${MAX} byte limit`);
  const huge = await upload(key, { filename: 'huge.txt', data: Buffer.alloc(MAX * 3, 'a') }, { purpose: 'agent_knowledge' });
  t.equal(huge.status, 400, 'a body over the route\'s read limit');
  t.equal(huge.body.error.code, 'validation_error');
  t.ok(huge.body.error.fields.file);
  const json = await env.request('POST', '/v1/documents', { key, body: { purpose: 'agent_knowledge', content_base64: big.toString('base64') } });
  t.equal(json.status, 400);
  t.match(json.body.error.fields.file, 'exceeds');
  t.same([await rows(), await files()], before, 'no row, no file');
  const exact = await upload(key, { filename: 'exact.txt', data: Buffer.alloc(MAX, 'b') }, { purpose: 'agent_knowledge' });
  t.equal(exact.status, 201, 'exactly the limit is accepted');
});

t.test('malformed multipart and bad fields are 400 with fields', async (t) => {
  const before = await rows();
  const ct = { 'content-type': 'multipart/form-data; boundary=abc' };
  const garbage = await env.request('POST', '/v1/documents', { key, rawBody: 'this is not multipart', headers: ct });
  t.equal(garbage.status, 400);
  t.match(garbage.body.error, { code: 'validation_error', fields: { body: /multipart/ } });
  const unterminated = await env.request('POST', '/v1/documents', { key, headers: ct,
    rawBody: '--abc\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhello' });
  t.equal(unterminated.status, 400);
  const noBoundary = await env.request('POST', '/v1/documents', { key, rawBody: multipart([{ name: 'purpose', value: 'x' }]).rawBody,
    headers: { 'content-type': 'multipart/form-data' } });
  t.equal(noBoundary.status, 400);
  const badPurpose = await upload(key, { filename: 'a.txt', data: TEXT }, { purpose: 'memes' });
  t.equal(badPurpose.status, 400);
  t.ok(badPurpose.body.error.fields.purpose);
  const unknownField = await upload(key, { filename: 'a.txt', data: TEXT }, { purpose: 'agent_knowledge', colour: 'blue' });
  t.ok(unknownField.body.error.fields.colour);
  const twice = await env.request('POST', '/v1/documents', { key, ...multipart([{ name: 'file', filename: 'a.txt', data: TEXT },
    { name: 'purpose', value: 'agent_knowledge' }, { name: 'purpose', value: 'agent_knowledge' }]) });
  t.match(twice.body.error.fields, { purpose: 'must be given once' });
  const noFile = await env.request('POST', '/v1/documents', { key, ...multipart([{ name: 'purpose', value: 'agent_knowledge' }]) });
  t.match(noFile.body.error.fields, { file: /required/ });
  const noPurpose = await upload(key, { filename: 'a.txt', data: TEXT });
  t.match(noPurpose.body.error.fields, { purpose: /required/ }, 'a key that may write both purposes must say which');
  const foreignAgent = await upload(key, { filename: 'a.txt', data: TEXT }, { agent_id: uuidv7() });
  t.match(foreignAgent.body.error.fields, { agent_id: /not an agent/ });
  t.equal(await rows(), before, 'nothing written');
});

t.test('list: paging, filters, and only the purposes the key may read', async (t) => {
  const agent = await env.request('POST', '/v1/agents', { key, body: { name: 'Front desk' } });
  t.equal(agent.status, 201);
  const agentId = agent.body.data.id;
  const k = await upload(key, { filename: 'menu.txt', data: TEXT }, { agent_id: agentId });
  t.equal(k.status, 201);
  t.match(k.body.data, { purpose: 'agent_knowledge', agent_id: agentId }, 'purpose follows the attachment');
  const e = await upload(key, { filename: 'ein-letter.pdf', data: PDF }, { purpose: 'enterprise_registration', name: 'IRS EIN letter' });
  t.equal(e.body.data.name, 'IRS EIN letter');
  const total = await rows();

  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const r = await env.request('GET', `/v1/documents?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
    t.equal(r.status, 200);
    t.ok(r.body.data.length <= 2);
    seen.push(...r.body.data.map((d: { id: string }) => d.id));
    cursor = r.body.meta.cursor;
  } while (cursor);
  t.equal(seen.length, total, 'every document once');
  t.same(seen, [...seen].sort().reverse(), 'newest first');

  const ent = await env.request('GET', '/v1/documents?purpose=enterprise_registration', { key });
  t.same(ent.body.data.map((d: { id: string }) => d.id), [e.body.data.id]);
  const byAgent = await env.request('GET', `/v1/documents?agent_id=${agentId}`, { key });
  t.same(byAgent.body.data.map((d: { id: string }) => d.id), [k.body.data.id]);

  const agentsOnly = await keyWith('agents:read');
  const a = await env.request('GET', '/v1/documents', { key: agentsOnly });
  t.equal(a.status, 200);
  t.ok(a.body.data.length > 0 && a.body.data.every((d: { purpose: string }) => d.purpose === 'agent_knowledge'), 'agents:read sees agent documents only');
  t.same((await env.request('GET', '/v1/documents?purpose=enterprise_registration', { key: agentsOnly })).body.data, []);
  const trustOnly = await keyWith('caller_trust:read');
  const c = await env.request('GET', '/v1/documents', { key: trustOnly });
  t.same(c.body.data.map((d: { id: string }) => d.id), [e.body.data.id], 'caller_trust:read sees registration documents only');
  t.equal((await env.request('GET', '/v1/documents', { key: other.api_key })).body.data.length, 0, 'another organization sees none');
});

t.test('delete removes the row and the file', async (t) => {
  const d = (await upload(key, { filename: 'old.png', data: PNG }, { purpose: 'agent_knowledge' })).body.data;
  t.ok((await readdir(dir)).includes(d.id));
  const del = await env.request('DELETE', `/v1/documents/${d.id}`, { key });
  t.equal(del.status, 204);
  t.equal((await env.db.oneOrNone('SELECT 1 FROM documents WHERE id = $1', [d.id])), null, 'no row');
  t.notOk((await readdir(dir)).includes(d.id), 'no file');
  t.equal((await env.request('GET', `/v1/documents/${d.id}`, { key })).status, 404);
  t.equal((await env.request('GET', `/v1/documents/${d.id}/content`, { key })).status, 404);
  t.equal((await env.request('DELETE', `/v1/documents/${d.id}`, { key })).status, 404);
});

t.test('another organization gets not_found on every id route', async (t) => {
  const d = (await upload(key, { filename: 'private.pdf', data: PDF }, { purpose: 'agent_knowledge' })).body.data;
  for (const [method, path] of [['GET', `/v1/documents/${d.id}`], ['GET', `/v1/documents/${d.id}/content`], ['DELETE', `/v1/documents/${d.id}`]]) {
    const r = await env.request(method, path, { key: other.api_key });
    t.equal(r.status, 404, `${method} ${path}`);
    t.equal(r.body.error.code, 'not_found');
  }
  t.equal((await env.request('GET', `/v1/documents/not-a-uuid`, { key })).status, 404);
  t.ok((await readdir(dir)).includes(d.id), 'still stored');
});

t.test('scopes: keys lacking them get 403 scope_missing', async (t) => {
  const d = (await upload(key, { filename: 'ent.pdf', data: PDF }, { purpose: 'enterprise_registration' })).body.data;
  const none = await keyWith('account:read');
  for (const [method, path, scopes] of [['POST', '/v1/documents', 'caller_trust:write, agents:write'], ['GET', '/v1/documents', 'caller_trust:read, agents:read'],
    ['GET', `/v1/documents/${d.id}`, 'caller_trust:read, agents:read'], ['GET', `/v1/documents/${d.id}/content`, 'caller_trust:read, agents:read'],
    ['DELETE', `/v1/documents/${d.id}`, 'caller_trust:write, agents:write']]) {
    const r = await env.request(method, path, { key: none, ...(method === 'POST' ? multipart([{ name: 'file', filename: 'a.txt', data: TEXT }]) : {}) });
    t.equal(r.status, 403, `${method} ${path}: 403`);
    t.equal(r.body.error.code, 'scope_missing');
    t.equal(r.body.error.fields.scope, `requires one of ${scopes}`);
    t.match(r.headers['www-authenticate'], `error="insufficient_scope"`);
    t.match(r.headers['www-authenticate'], `scope="${scopes.replace(', ', ' ')}"`);
  }
  // The route's any-of scope lets these keys in; the document's purpose then needs its own scope.
  const agentsOnly = await keyWith('agents:read', 'agents:write');
  for (const [method, path, scope] of [['GET', `/v1/documents/${d.id}`, 'caller_trust:read'], ['GET', `/v1/documents/${d.id}/content`, 'caller_trust:read'],
    ['DELETE', `/v1/documents/${d.id}`, 'caller_trust:write']]) {
    const r = await env.request(method, path, { key: agentsOnly });
    t.equal(r.status, 403, `${method} ${path} with agents scopes: 403`);
    t.match(r.body.error, { code: 'scope_missing', fields: { scope: `requires ${scope}` } });
  }
  const up = await upload(agentsOnly, { filename: 'a.pdf', data: PDF }, { purpose: 'enterprise_registration' });
  t.match(up.body.error, { code: 'scope_missing', fields: { scope: 'requires caller_trust:write' } });
  const inferred = await upload(agentsOnly, { filename: 'a.txt', data: TEXT });
  t.equal(inferred.status, 201, 'without purpose, the one writable purpose');
  t.equal(inferred.body.data.purpose, 'agent_knowledge');
  const readOnly = await keyWith('caller_trust:read');
  t.equal((await env.request('DELETE', `/v1/documents/${d.id}`, { key: readOnly })).status, 403);
});

t.test('attached to an enterprise registration: listed in it, kept while it is submitted', async (t) => {
  const regId = await createRegistration(env, key, org.phone_numbers);
  const d = await upload(key, { filename: 'articles.pdf', data: PDF }, { registration_id: regId });
  t.equal(d.status, 201);
  t.match(d.body.data, { purpose: 'enterprise_registration', registration_id: regId });
  const reg = await env.request('GET', `/v1/caller-trust/enterprise/${regId}`, { key });
  t.same(reg.body.data.documents, [{ id: d.body.data.id, name: 'articles.pdf', content_type: 'application/pdf', size_bytes: PDF.length }]);
  const listed = await env.request('GET', `/v1/documents?registration_id=${regId}`, { key });
  t.same(listed.body.data.map((x: { id: string }) => x.id), [d.body.data.id]);
  const foreign = await upload(other.api_key, { filename: 'a.pdf', data: PDF }, { registration_id: regId });
  t.match(foreign.body.error.fields, { registration_id: /not an enterprise registration/ });
  const wrongPurpose = await upload(key, { filename: 'a.pdf', data: PDF }, { purpose: 'agent_knowledge', registration_id: regId });
  t.match(wrongPurpose.body.error.fields, { registration_id: /enterprise_registration/ });

  await env.db.none(`UPDATE enterprise_registrations SET status = 'PENDING_VETTING' WHERE id = $1`, [regId]);
  const del = await env.request('DELETE', `/v1/documents/${d.body.data.id}`, { key });
  t.equal(del.status, 409);
  t.match(del.body.error, { code: 'state_conflict', fields: { entity: 'enterprise_registration', status: 'PENDING_VETTING' } });
  t.ok((await readdir(dir)).includes(d.body.data.id), 'file kept');
  await env.db.none(`UPDATE enterprise_registrations SET status = 'REJECTED' WHERE id = $1`, [regId]);
  t.equal((await env.request('DELETE', `/v1/documents/${d.body.data.id}`, { key })).status, 204, 'deletable once rejected');
  t.same((await env.request('GET', `/v1/caller-trust/enterprise/${regId}`, { key })).body.data.documents, []);
});

t.test('Range on content', async (t) => {
  const d = (await upload(key, { filename: 'r.pdf', data: PDF }, { purpose: 'agent_knowledge' })).body.data;
  const path = `/v1/documents/${d.id}/content`;
  const head = await env.request('GET', path, { key, headers: { range: 'bytes=0-4' } });
  t.equal(head.status, 206);
  t.equal(head.headers['content-range'], `bytes 0-4/${PDF.length}`);
  t.equal(head.text, '%PDF-');
  const tail = await env.request('GET', path, { key, headers: { range: 'bytes=-6' } });
  t.ok(tail.raw.equals(PDF.subarray(PDF.length - 6)));
  const past = await env.request('GET', path, { key, headers: { range: `bytes=${PDF.length}-` } });
  t.equal(past.status, 416);
  t.equal(past.headers['content-range'], `bytes */${PDF.length}`);
});

t.test('the orphan sweep removes files without a row and leftovers of interrupted writes, after a grace period', async (t) => {
  const storage = new LocalDocumentStorage(dir);
  const kept = (await upload(key, { filename: 'kept.txt', data: TEXT }, { purpose: 'agent_knowledge' })).body.data.id;
  const orphan = uuidv7();
  const partial = `${uuidv7()}.abcdef.partial`;
  await writeFile(join(dir, orphan), 'crashed before its row');
  await writeFile(join(dir, partial), 'crashed mid-write');
  const young = uuidv7();
  await writeFile(join(dir, young), 'an upload whose row is being written');
  const old = new Date(Date.now() - 2 * 3600_000);
  for (const f of [orphan, partial, kept]) await utimes(join(dir, f), old, old);
  const removed = await sweepOrphans(env.db, storage, 3600_000);
  t.equal(removed, 2);
  const left = await readdir(dir);
  t.notOk(left.includes(orphan));
  t.notOk(left.includes(partial));
  t.ok(left.includes(kept), 'a document\'s file stays');
  t.ok(left.includes(young), 'a young file stays');
  await storage.remove(young);
});
