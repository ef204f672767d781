// The Telnyx CNAM adapter against Telnyx's response shapes (fixtures/telnyx: bodies in the documented shapes of
// GET /v2/phone_numbers and PATCH /v2/phone_numbers/{id}/voice, not captured from a live account), served over
// real HTTP by a local stand-in that also records what the adapter sent.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { TelnyxCnamProvider } from '../../shared/cnam/telnyx.ts';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/telnyx/${name}.json`, import.meta.url), 'utf8');

interface Seen { method: string; url: string; auth: string | undefined; body: any }
const seen: Seen[] = [];
let answers: [number, string][] = [];
const server = createServer(async (req: IncomingMessage, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body: text ? JSON.parse(text) : null });
  const [status, body] = answers.shift() ?? [500, '{"errors":[{"title":"unexpected"}]}'];
  res.writeHead(status, { 'content-type': 'application/json' }).end(body);
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
t.teardown(() => server.close());
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const provider = new TelnyxCnamProvider('KEY_test_123', `${base}/v2`);

t.beforeEach(() => { seen.length = 0; });

t.test('finds the number, patches its CNAM listing, registered when Telnyx echoes it', async (t) => {
  answers = [[200, fixture('list-found')], [200, fixture('voice-updated')]];
  t.same(await provider.register('+13125550123', 'ACME DENTAL'), { status: 'registered' });
  t.equal(seen.length, 2);
  t.equal(seen[0].method, 'GET');
  t.equal(decodeURIComponent(seen[0].url), '/v2/phone_numbers?filter[phone_number]=+13125550123&page[size]=1');
  t.equal(seen[0].auth, 'Bearer KEY_test_123');
  t.equal(seen[1].method, 'PATCH');
  t.equal(seen[1].url, '/v2/phone_numbers/1293384261075731499/voice');
  t.same(seen[1].body, { cnam_listing: { cnam_listing_enabled: true, cnam_listing_details: 'ACME DENTAL' } });
});

t.test('a 422 is the provider\'s rejection, with its detail as the reason', async (t) => {
  answers = [[200, fixture('list-found')], [422, fixture('voice-422')]];
  const r = await provider.register('+13125550123', 'ACME DENTAL');
  t.equal(r.status, 'rejected');
  t.match((r as { reason: string }).reason, /alphanumeric characters or spaces/);
});

t.test('a number the account does not hold is rejected without a PATCH', async (t) => {
  answers = [[200, fixture('list-empty')]];
  t.match(await provider.register('+13125550199', 'ACME'), { status: 'rejected', reason: /not a number of the Telnyx account/ });
  t.equal(seen.length, 1);
});

t.test('server errors and an answer without the listing throw (the job retries)', async (t) => {
  answers = [[503, '{"errors":[{"title":"Service Unavailable"}]}']];
  await t.rejects(provider.register('+13125550123', 'ACME'), /answered 503/);
  answers = [[200, fixture('list-found')], [500, '{}']];
  await t.rejects(provider.register('+13125550123', 'ACME'), /answered 500/);
  answers = [[200, fixture('list-found')], [200, fixture('voice-updated')]];
  await t.rejects(provider.register('+13125550123', 'OTHER NAME'), /without the CNAM listing/);
});
