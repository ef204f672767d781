// Signaling's /healthz, /readyz (its stores, and its media link when it drives media) and /metrics (this process's
// sockets and browser legs, redemptions, and the call transitions it applies, with one info log line each), behind
// METRICS_TOKEN; and a clean shutdown (SIGTERM, with media stopping at the same time) logs no warning.
import t from 'tap';
import { eventually, httpCall, type Proc } from '../helpers/env.ts';
import { assertMetricsRefused, scrape, total, type Sample } from '../helpers/prometheus.ts';
import { callEnv, callOrg, settled } from '../calls/helpers.ts';
import { Phone, httpBase, softphoneUrl } from '../signaling/softphone.ts';

const TOKEN = 'signaling-metrics-token-0123456789';
const { env, workers } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.1', METRICS_TOKEN: TOKEN });
// Without media: the call flow alone (the media link is tested below with a media process of its own).
const sig = env.spawn('signaling', { SIGNALING_MEDIA: 'off' });
await sig.ready();
const base = httpBase(softphoneUrl(sig));
const workersBase = /"health":"(http:\/\/[^"]+)\/healthz"/.exec(workers!.output)![1];

const logLines = (p: Proc, fields: Record<string, unknown>) => p.output.split('\n').filter((l) => l.startsWith('{'))
  .map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => Object.entries(fields).every(([k, v]) => l[k] === v));
const value = (s: Sample[], name: string, labels: Record<string, string> = {}) => total(s, name, labels);

t.test('/healthz and /readyz; /metrics refuses without the token', async (t) => {
  t.match((await httpCall(base, 'GET', '/healthz')).body, { status: 'ok', proc: 'signaling' });
  const r = await httpCall(base, 'GET', '/readyz');
  t.equal(r.status, 200);
  t.same(r.body, { status: 'ready', postgres: 'ok', redis: 'ok' }, 'no media part when signaling carries no media');
  await assertMetricsRefused(t, base, [undefined, 'Bearer wrong-token-0123456789abcdef']);
});

t.test('a browser call: this process\'s socket and leg while live, the transition it applies, then 0', async (t) => {
  const org = await callOrg(env);
  const before = (await scrape(base, TOKEN)).samples;
  const tk = await env.request('POST', '/v1/webrtc-token', { key: org.api_key, body: { from_number: org.from, to_number: '+14155550008' } });
  t.equal(tk.status, 201);
  const callId: string = tk.body.data.call_id;
  const p = await Phone.connect(`${softphoneUrl(sig)}`);
  p.send({ type: 'hello', v: 1, ticket: tk.body.data.token });
  await p.frame('answered');

  const live = (await scrape(base, TOKEN)).samples;
  t.equal(value(live, 'openline_signaling_sockets'), 1);
  t.equal(value(live, 'openline_signaling_legs', { role: 'browser' }), 1);
  t.equal(value(live, 'openline_signaling_tickets_redeemed_total') - value(before, 'openline_signaling_tickets_redeemed_total'), 1);
  // The platform-wide leg accounts are the workers' gauge (signaling keeps them current for browser calls).
  await eventually(async () => value((await scrape(workersBase, TOKEN)).samples, 'openline_live_legs', { role: 'browser' }) === 1, 30_000, 200);
  t.pass('the workers report the live browser leg');

  // The browser hangs up after the answer: signaling applies the end of the call.
  p.close();
  const c = await settled(env, org, callId);
  t.match(c, { status: 'COMPLETED', disconnection_reason: 'browser_hangup' });
  const after = await eventually(async () => {
    const s = (await scrape(base, TOKEN)).samples;
    return value(s, 'openline_signaling_sockets') === 0 && value(s, 'openline_signaling_legs', { role: 'browser' }) === 0 ? s : null;
  });
  t.equal(value(after, 'openline_call_transitions_total', { from: 'ANSWERED', to: 'COMPLETED' })
    - value(before, 'openline_call_transitions_total', { from: 'ANSWERED', to: 'COMPLETED' }), 1, 'counted by signaling, which applied it');
  t.match(logLines(sig, { event: 'call_transition', call_id: callId }), [
    { level: 30, organization_id: org.organization_id, from: 'ANSWERED', to: 'COMPLETED', cause: 'abandon:setup_abandoned',
      disconnection_reason: 'browser_hangup' },
  ], 'one info line for the transition it applied');
});

/** A media process and a signaling process driving it. */
async function withMedia() {
  const media = env.spawn('media', { MEDIA_PORT: '0', MEDIA_WORKERS: '1' });
  await media.ready(60_000);
  const controlUrl = /"control":"([^"]+)"/.exec(media.output)![1];
  const signaling = env.spawn('signaling', { MEDIA_CONTROL_URL: controlUrl });
  await signaling.ready();
  const mbase = httpBase(softphoneUrl(signaling));
  await eventually(async () => (await httpCall(mbase, 'GET', '/readyz')).status === 200, 20_000);
  return { media, signaling, mbase };
}

t.test('with media: /readyz names the media link', async (t) => {
  const { media, signaling, mbase } = await withMedia();
  t.same((await httpCall(mbase, 'GET', '/readyz')).body, { status: 'ready', postgres: 'ok', redis: 'ok', media: 'ok' });
  t.equal(value((await scrape(mbase, TOKEN)).samples, 'openline_signaling_media_link_up'), 1);
  media.child.kill('SIGTERM');
  t.equal(await media.exited, 0);
  const down = await eventually(async () => { const r = await httpCall(mbase, 'GET', '/readyz'); return r.status === 503 ? r : null; }, 20_000);
  t.same(down.body, { status: 'not_ready', postgres: 'ok', redis: 'ok', media: 'down' }, 'not ready without its media process');
  t.equal(value((await scrape(mbase, TOKEN)).samples, 'openline_signaling_media_link_up'), 0);
  await signaling.kill('SIGTERM');
});

t.test('a clean stop of signaling and media together logs no warning', async (t) => {
  const { media, signaling } = await withMedia();
  // As `npm start` stops everything: SIGTERM to both at once (media is usually gone first, and signaling sees it).
  media.child.kill('SIGTERM');
  await media.exited;
  // Signaling has seen media go (whatever it logged about it) before its own SIGTERM.
  await eventually(async () => /"msg":"media (process stopped|event stream ended)/.test(signaling.output), 20_000);
  signaling.child.kill('SIGTERM');
  t.equal(await signaling.exited, 0, 'signaling stopped cleanly');
  t.match(signaling.output, /"msg":"stopped"/);
  const warnings = signaling.output.split('\n').filter((l) => l.startsWith('{') && JSON.parse(l).level >= 40);
  t.same(warnings, [], 'no warning or error on a clean shutdown');
  t.match(signaling.output, /"msg":"media process stopped: its sessions are gone"/, 'the media stop is logged at info');
});
