// The Telnyx adapter against recorded responses (test/fixtures/telnyx-reputation), served by a loopback HTTP
// server that checks each request; and the sandbox provider's documented rules. Nothing leaves the machine.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ProviderError } from '../../shared/caller-trust/reputation/provider.ts';
import { sandboxEvidence } from '../../shared/caller-trust/reputation/sandbox.ts';
import { telnyxEvidence, TelnyxReputationProvider } from '../../shared/caller-trust/reputation/telnyx.ts';
import { ROOT } from '../helpers/env.ts';

const fixture = (name: string) => readFileSync(`${ROOT}test/fixtures/telnyx-reputation/${name}`, 'utf8');

interface Seen { method: string; url: string; auth: string | undefined; body: string }
type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

/** A server answering the scripted answers in order (the last one repeats); records what it was sent. The default
 *  timeout is long: a loaded machine must not turn a slow answer into a retry. */
async function telnyxDouble(t: { teardown(fn: () => unknown): void }, answers: Answer[], timeoutMs = 10_000) {
  const seen: Seen[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body });
      const a = answers[Math.min(seen.length - 1, answers.length - 1)];
      if (a === 'hang') { hanging.push(res); return; }
      res.writeHead(a.status, { 'content-type': 'application/json', ...(a.headers ?? {}) });
      res.end(a.body ?? '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { for (const h of hanging) h.destroy(); server.close(() => r()); }));
  const provider = new TelnyxReputationProvider({
    apiKey: 'KEYtest', enterpriseId: '4a6192a4-573d-446d-b3ce-aff9117272a6',
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2`, timeoutMs, attempts: 3, backoffMs: 10,
  });
  return { provider, seen };
}

const ENTERPRISE = '/v2/enterprises/4a6192a4-573d-446d-b3ce-aff9117272a6/reputation';

t.test('a fresh lookup: the request, and a high risk mapped to ATT with the category as label', async (t) => {
  const { provider, seen } = await telnyxDouble(t, [{ status: 200, body: fixture('number-high.json') }]);
  const ev = await provider.lookup('+16282015558');
  t.same(ev, [
    { carrier: 'ATT', riskLevel: 'HIGH', displayedLabel: 'Telemarketing' },
    { carrier: 'TMOBILE', riskLevel: null, displayedLabel: null },
    { carrier: 'VERIZON', riskLevel: null, displayedLabel: null },
  ], 'Hiya answers for AT&T; the other carriers are unavailable, not low');
  t.equal(seen.length, 1);
  t.equal(seen[0].method, 'GET');
  t.equal(seen[0].url, `${ENTERPRISE}/numbers/%2B16282015558?fresh=true`, 'the + is URL-encoded and fresh=true asked');
  t.equal(seen[0].auth, 'Bearer KEYtest');
});

t.test('recorded answers map to evidence', async (t) => {
  const parse = (f: string) => telnyxEvidence(JSON.parse(fixture(f)));
  t.match(parse('number-medium-uncategorized.json')[0], { riskLevel: 'MEDIUM', displayedLabel: 'Spam Risk' }, 'flagged without a category: a generic label');
  t.match(parse('number-low.json')[0], { riskLevel: 'LOW', displayedLabel: null }, 'not flagged: no label');
  t.same(parse('number-no-data.json').map((e) => e.riskLevel), [null, null, null], 'reputation_data null: unavailable everywhere');
  t.same(telnyxEvidence({ data: { reputation_data: { spam_risk: 'unknown' } } }).map((e) => e.riskLevel), [null, null, null],
    'an unknown level is unavailable, never guessed');
});

t.test('retries: 503 then 200; 429 with Retry-After; a timeout; a 401 is not retried', async (t) => {
  const a = await telnyxDouble(t, [{ status: 503, body: fixture('error-503.json') }, { status: 200, body: fixture('number-low.json') }]);
  t.match((await a.provider.lookup('+16282015551'))[0], { riskLevel: 'LOW' });
  t.equal(a.seen.length, 2, 'retried once after a 503');

  const b = await telnyxDouble(t, [{ status: 429, body: fixture('error-429.json'), headers: { 'retry-after': '0' } }, { status: 200, body: fixture('number-high.json') }]);
  t.match((await b.provider.lookup('+16282015558'))[0], { riskLevel: 'HIGH' });
  t.equal(b.seen.length, 2);

  const c = await telnyxDouble(t, ['hang'], 300);
  const timeout = await c.provider.lookup('+16282015558').catch((e) => e);
  t.ok(timeout instanceof ProviderError);
  t.match(timeout.message, /did not answer within 300 ms/);
  t.equal(timeout.retryable, true);
  t.equal(c.seen.length, 3, 'every attempt timed out');

  const d = await telnyxDouble(t, [{ status: 401, body: fixture('error-401.json') }]);
  const denied = await d.provider.lookup('+16282015558').catch((e) => e);
  t.ok(denied instanceof ProviderError);
  t.equal(denied.status, 401);
  t.equal(denied.retryable, false);
  t.match(denied.message, /10009 Authentication failed/, 'the provider\'s error is named');
  t.equal(d.seen.length, 1, 'a 401 is not retried');

  const e = await telnyxDouble(t, [{ status: 200, body: '<html>maintenance</html>' }]);
  const garbled = await e.provider.lookup('+16282015558').catch((err) => err);
  t.ok(garbled instanceof ProviderError);
  t.match(garbled.message, /not JSON/);

  const f = await telnyxDouble(t, [{ status: 500, body: fixture('error-503.json') }]);
  const exhausted = await f.provider.lookup('+16282015558').catch((err) => err);
  t.equal(exhausted.status, 500);
  t.equal(f.seen.length, 3, 'a GET is retried up to the attempts');
});

t.test('remediation: submit, poll through the states, per-number outcome', async (t) => {
  const { provider, seen } = await telnyxDouble(t, [
    { status: 202, body: fixture('remediation-submitted.json') },
    { status: 200, body: fixture('remediation-submitted.json') },
    { status: 200, body: fixture('remediation-in-progress.json') },
    { status: 200, body: fixture('remediation-completed.json') },
  ]);
  const ref = await provider.submitRemediation({ phoneNumber: '+16282015558', kind: 'umbrella', callPurpose: 'Appointment reminders.' });
  t.equal(ref, 'b7c1f1c0-7a9d-4f0a-9d3e-2f6a1c4b8e21');
  t.equal(seen[0].method, 'POST');
  t.equal(seen[0].url, `${ENTERPRISE}/remediation`);
  t.same(JSON.parse(seen[0].body), { phone_numbers: ['+16282015558'], call_purpose: 'Appointment reminders.' });
  t.same(await provider.remediationState(ref, '+16282015558'), { status: 'open', reason: null });
  t.equal(seen[1].url, `${ENTERPRISE}/remediation/${ref}`);
  t.same(await provider.remediationState(ref, '+16282015558'), { status: 'in_review', reason: null });
  t.same(await provider.remediationState(ref, '+16282015558'), { status: 'resolved', reason: null });
  t.same(await provider.remediationState(ref, '+16282015577'), { status: 'rejected', reason: 'provider outcome: refused' });
  t.match(await provider.remediationState(ref, '+16282015599'), { status: 'rejected', reason: /not in the results/ });
});

t.test('a POST is not retried when the provider may have acted (500), is on 503', async (t) => {
  const a = await telnyxDouble(t, [{ status: 500, body: fixture('error-503.json') }]);
  const err = await a.provider.submitRemediation({ phoneNumber: '+16282015558', kind: 'umbrella', callPurpose: 'x' }).catch((e) => e);
  t.ok(err instanceof ProviderError);
  t.equal(a.seen.length, 1, 'not repeated: a second case could be filed');
  const b = await telnyxDouble(t, [{ status: 503, body: fixture('error-503.json') }, { status: 202, body: fixture('remediation-submitted.json') }]);
  t.equal(await b.provider.submitRemediation({ phoneNumber: '+16282015558', kind: 'umbrella', callPurpose: 'x' }), 'b7c1f1c0-7a9d-4f0a-9d3e-2f6a1c4b8e21');
  t.equal(b.seen.length, 2);
});

t.test('the sandbox provider\'s documented rules', async (t) => {
  const levels = (n: string) => sandboxEvidence(n).map((e) => `${e.carrier}:${e.riskLevel}:${e.displayedLabel}`);
  t.same(levels('+14155550101'), ['ATT:LOW:null', 'TMOBILE:LOW:null', 'VERIZON:LOW:null']);
  t.same(levels('+14155550107'), ['ATT:LOW:null', 'TMOBILE:HIGH:Scam Likely', 'VERIZON:LOW:null']);
  t.same(levels('+14155550108'), ['ATT:MEDIUM:Spam Risk', 'TMOBILE:LOW:null', 'VERIZON:HIGH:Potential Spam']);
  t.same(levels('+14155550109'), ['ATT:LOW:null', 'TMOBILE:LOW:null', 'VERIZON:null:null']);
  t.same(levels('+14155550100'), ['ATT:null:null', 'TMOBILE:null:null', 'VERIZON:null:null']);
});
