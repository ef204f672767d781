// The access log: one JSON line per request, in the logger's own line shape and on its destination, with the
// request id the client saw, method, path, status, duration and organization; odd paths stay valid JSON; lines are
// batched but none is lost when the gateway closes; nothing is written when the level is above info.
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { startGateway } from '../../gateway/start.ts';
import { httpCall, testEnv } from '../helpers/env.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ scopes: ['account:read'] });

function collector() {
  const chunks: string[] = [];
  const stream = new Writable({ write(chunk, _enc, done) { chunks.push(String(chunk)); done(); } });
  return { stream, lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

/** A request line sent byte for byte (Node's client would percent-encode the path); resolves with the status. */
function rawGet(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    let got = '';
    s.on('data', (d) => { got += d; });
    s.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(got)?.[1] ?? 0)));
    s.on('error', reject);
  });
}

t.test('one line per request, matching what the client saw', async (t) => {
  const out = collector();
  const g = await startGateway(env.config, pino({ level: 'info', base: { proc: 'gateway' }, timestamp: pino.stdTimeFunctions.isoTime }, out.stream));
  const ok = await httpCall(g.url, 'GET', '/v1/account', { key: org.api_key });
  const anon = await httpCall(g.url, 'GET', '/v1/account');
  const odd = await rawGet(g.port, '/v1/no"such\\path');
  await g.stop();
  const requests = out.lines().filter((l) => l.msg === 'request');
  t.equal(requests.length, 3, 'every request, flushed by close');
  const [a, b, c] = requests;
  t.same(Object.keys(a), ['level', 'time', 'proc', 'req_id', 'method', 'path', 'status', 'ms', 'org', 'msg'], 'the logger\'s line shape');
  t.equal(a.level, 30);
  t.equal(a.proc, 'gateway');
  t.ok(Math.abs(Date.parse(a.time) - Date.now()) < 10_000, 'an ISO time');
  t.equal(a.req_id, ok.headers['x-request-id'], 'the request id the client got');
  t.equal(a.method, 'GET');
  t.equal(a.path, '/v1/account');
  t.equal(a.status, 200);
  t.ok(typeof a.ms === 'number' && a.ms >= 0, 'duration in ms');
  t.equal(a.org, org.organization_id);
  t.equal(b.status, 401);
  t.equal(b.req_id, anon.headers['x-request-id']);
  t.notOk('org' in b, 'no organization for an unauthenticated request');
  t.equal(c.status, odd);
  t.equal(c.path, '/v1/no"such\\path', 'quotes and backslashes in a path stay valid JSON');
});

t.test('nothing is written above info', async (t) => {
  const out = collector();
  const g = await startGateway(env.config, pino({ level: 'warn' }, out.stream));
  await httpCall(g.url, 'GET', '/v1/account', { key: org.api_key });
  await g.stop();
  t.equal(out.lines().filter((l) => l.msg === 'request').length, 0);
});
