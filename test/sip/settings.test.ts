// CARRIER=sip's settings (read once in shared/config.ts: a bad value stops the process naming the variable), and
// what the API refuses with the SIP trunk carrier: AI calls (503, no voice-agent media pipeline yet) and buying
// numbers (409 numbers_from_trunk: the trunk provider sells them).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../shared/config.ts';
import { aiCall, callOrg } from '../calls/helpers.ts';
import { eventually, testEnv } from '../helpers/env.ts';

const base = { CARRIER: 'sip', SIP_TRUNK_URI: 'sip:203.0.113.5' };

t.test('defaults and parsing', async (t) => {
  const s = loadConfig(base).sip!;
  t.same(s.trunk, { uri: 'sip:203.0.113.5', host: '203.0.113.5', port: 5060, transport: 'udp' });
  t.same(s.listen, { host: '127.0.0.1', port: 5060 }, 'SIP_LISTEN defaults to 127.0.0.1:5060');
  t.same(s.allow, [{ address: '203.0.113.5', prefix: 32, family: 'ipv4' }], 'SIP_TRUNK_ALLOW defaults to the trunk host');
  t.equal(s.userFormat, 'e164');
  t.equal(s.pricePerMinuteCents, 2);
  t.equal(s.credentials, null);
  const full = loadConfig({
    ...base, SIP_TRUNK_URI: 'sip:sip.example.net:5080;transport=TCP', SIP_TRUNK_ALLOW: '198.51.100.0/24, 2001:db8::/32,192.0.2.7',
    SIP_LISTEN: '[2001:db8::1]:5070', SIP_USER_FORMAT: 'digits', SIP_TRUNK_USERNAME: 'u', SIP_TRUNK_PASSWORD: 'p', SIP_PRICE_PER_MINUTE_CENTS: '0',
  }).sip!;
  t.same(full.trunk, { uri: 'sip:sip.example.net:5080;transport=TCP', host: 'sip.example.net', port: 5080, transport: 'tcp' });
  t.same(full.allow.map((c) => `${c.address}/${c.prefix}`), ['198.51.100.0/24', '2001:db8::/32', '192.0.2.7/32']);
  t.same(full.listen, { host: '2001:db8::1', port: 5070 });
  t.same(full.credentials, { username: 'u', password: 'p' });
  t.equal(full.userFormat, 'digits');
  t.equal(full.pricePerMinuteCents, 0);
  t.equal(loadConfig({}).sip, null, 'no SIP settings without CARRIER=sip');
});

t.test('a bad value names its variable', async (t) => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ SIP_TRUNK_URI: '' }, /CARRIER=sip needs SIP_TRUNK_URI/],
    [{ CARRIER: 'telnyx' }, /CARRIER must be sandbox, livekit or sip/],
    [{ SIP_TRUNK_URI: 'http://203.0.113.5' }, /SIP_TRUNK_URI/],
    [{ SIP_TRUNK_URI: 'sip:+14155550100@203.0.113.5' }, /SIP_TRUNK_URI .*no user part/],
    [{ SIP_TRUNK_URI: 'sip:203.0.113.5;transport=tls' }, /transport=tls: set SIP_TLS_CERT/],
    [{ SIP_TRUNK_URI: 'sip:203.0.113.5;transport=sctp' }, /SIP_TRUNK_URI/],
    [{ SIP_TRUNK_URI: 'sips:203.0.113.5' }, /SIP_TRUNK_URI/],
    [{ SIP_TRUNK_URI: 'sip:trunk.example.net' }, /SIP_TRUNK_ALLOW/],
    [{ SIP_TRUNK_ALLOW: '10.0.0.0/33' }, /SIP_TRUNK_ALLOW/],
    [{ SIP_TRUNK_ALLOW: 'the trunk' }, /SIP_TRUNK_ALLOW/],
    [{ SIP_TRUNK_ALLOW: ' , ' }, /SIP_TRUNK_ALLOW/],
    [{ SIP_LISTEN: '0.0.0.0:5060' }, /SIP_LISTEN/],
    [{ SIP_LISTEN: 'localhost:5060' }, /SIP_LISTEN/],
    [{ SIP_LISTEN: '127.0.0.1' }, /SIP_LISTEN/],
    [{ SIP_LISTEN: '127.0.0.1:70000' }, /SIP_LISTEN/],
    [{ SIP_USER_FORMAT: 'national' }, /SIP_USER_FORMAT/],
    [{ SIP_TRUNK_USERNAME: 'u' }, /SIP_TRUNK_USERNAME and SIP_TRUNK_PASSWORD/],
    [{ SIP_TRUNK_PASSWORD: 'p' }, /SIP_TRUNK_USERNAME and SIP_TRUNK_PASSWORD/],
    [{ SIP_PRICE_PER_MINUTE_CENTS: '1.5' }, /SIP_PRICE_PER_MINUTE_CENTS/],
  ];
  for (const [env, message] of bad) t.throws(() => loadConfig({ ...base, ...env }), message, JSON.stringify(env));
});

t.test('SIP over TLS: the files are read and checked at start, the TLS port defaults to SIP_LISTEN\'s + 1', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ol-sip-tls-settings-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const openssl = (args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir });
    if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr}`);
  };
  for (const n of ['a', 'b']) openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${n}.key`, '-out', `${n}.pem`, '-days', '1', '-subj', `/CN=${n}`]);
  writeFileSync(join(dir, 'junk.pem'), 'not a certificate');
  const f = (n: string) => join(dir, n);
  const tls = { ...base, SIP_TRUNK_URI: 'sip:203.0.113.5;transport=tls', SIP_TLS_CERT: f('a.pem'), SIP_TLS_KEY: f('a.key') };
  const s = loadConfig(tls).sip!;
  t.same(s.trunk, { uri: 'sip:203.0.113.5;transport=tls', host: '203.0.113.5', port: 5061, transport: 'tls' }, 'TLS trunks default to port 5061');
  t.equal(s.tls?.port, 5061, 'the TLS listener defaults to SIP_LISTEN\'s port + 1');
  t.equal(s.tls?.ca, null, 'no SIP_TLS_CA: Node\'s bundled roots');
  t.match(s.tls?.cert, /BEGIN CERTIFICATE/);
  t.equal(loadConfig({ ...tls, SIP_TLS_CA: f('b.pem'), SIP_TLS_PORT: '5071' }).sip!.tls?.port, 5071);
  t.equal(loadConfig({ ...tls, SIP_LISTEN: '127.0.0.1:0' }).sip!.tls?.port, 0, 'port 0 picks a free one');
  t.equal(loadConfig(base).sip!.tls, null, 'no TLS settings for a UDP trunk');
  const bad: [Record<string, string>, RegExp][] = [
    [{ SIP_TLS_KEY: '' }, /set SIP_TLS_KEY/],
    [{ SIP_TLS_CERT: f('missing.pem') }, /SIP_TLS_CERT cannot be read/],
    [{ SIP_TLS_CERT: f('junk.pem') }, /SIP_TLS_CERT is not a PEM certificate/],
    [{ SIP_TLS_KEY: f('a.pem') }, /SIP_TLS_KEY is not a PEM private key/],
    [{ SIP_TLS_KEY: f('b.key') }, /SIP_TLS_KEY is not the private key of SIP_TLS_CERT/],
    [{ SIP_TLS_CA: f('junk.pem') }, /SIP_TLS_CA is not a PEM certificate/],
    [{ SIP_TLS_PORT: '70000' }, /SIP_TLS_PORT/],
    [{ SIP_TLS_PORT: '5060' }, /SIP_TLS_PORT \(5060\) is SIP_LISTEN's port/],
  ];
  for (const [env, message] of bad) t.throws(() => loadConfig({ ...tls, ...env }), message, JSON.stringify(env));
});

t.test('the processes stop at start on a bad value, naming it', async (t) => {
  const env = await testEnv(t, { gateway: false });
  for (const proc of ['signaling', 'workers'] as const) {
    const p = env.spawn(proc, { CARRIER: 'sip', SIP_TRUNK_URI: 'sip:203.0.113.5', SIP_LISTEN: 'everywhere' });
    const code = await p.exited;
    t.not(code, 0, `${proc} exits`);
    t.match(p.output, /SIP_LISTEN must be ADDRESS:PORT/, `${proc} says why`);
  }
});

t.test('with CARRIER=sip: AI calls 503, buying numbers 409 numbers_from_trunk', async (t) => {
  const env = await testEnv(t, { env: { ...base, SIP_TRUNK_URI: 'sip:127.0.0.1:5999' } });
  const org = await callOrg(env);
  const ai = await aiCall(env, org, '+14155550123');
  t.equal(ai.status, 503);
  t.equal(ai.body.error.code, 'service_unavailable');
  t.match(ai.body.error.message, /voice-agent media pipeline/);
  t.match(ai.body.error.resolution_hint, /POST \/v1\/calls\/dial/);
  t.equal(Number((await env.db.one('SELECT count(*) AS n FROM calls')).n), 0, 'no call row');
  const before = Number((await env.db.one('SELECT count(*) AS n FROM phone_numbers')).n);
  const buy = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { area_code: '415' } });
  t.equal(buy.status, 409);
  t.equal(buy.body.error.code, 'numbers_from_trunk');
  t.match(buy.body.error.message, /trunk provider/);
  t.equal(Number((await env.db.one('SELECT count(*) AS n FROM phone_numbers')).n), before, 'no number row');
  const spec = await eventually(async () => (await env.request('GET', '/v1/openapi.json')).body);
  t.ok(spec.paths['/v1/calls'].post.responses['503'], 'OpenAPI: POST /v1/calls documents 503');
  t.match(JSON.stringify(spec.paths['/v1/phone-numbers'].post.responses['409']), /numbers_from_trunk/, 'OpenAPI: POST /v1/phone-numbers documents numbers_from_trunk');
});
