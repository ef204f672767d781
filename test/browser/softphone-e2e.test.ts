// Browser calling end to end: real Chromium (fake microphone) on the gateway's /softphone page, the signaling
// WebSocket, the media process (mediasoup 3.12.16) and the workers with the sandbox carrier, PostgreSQL, Redis and a
// webhook receiver. The sandbox far end plays a tone then echoes the browser, so RTP counted both ways in the page
// and the far end's echo counter prove audio went browser → media → far end → media → browser.
import t, { type Test } from 'tap';
import { startMedia } from '../helpers/media.ts';
import { chromiumSkip, launchChromium, openPage, pageEventually } from '../helpers/browser.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { eventually, type Proc } from '../helpers/env.ts';
import { callEnv, callOrg, channelsUsed, deliveriesFor, getCall, settled, subscribeCalls, type CallOrg } from '../calls/helpers.ts';
import { Phone, softphoneUrl } from '../signaling/softphone.ts';
import type { Page } from 'playwright-core';

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  // Sandbox at 0.1: busy at 0.1 s, a ring-out takes 3 s; 0008 answers and talks until hung up.
  const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.1' });
  const { media, controlUrl, client: mediaClient } = await startMedia(t, env, { MEDIA_SANDBOX_TONE_MS: '500' });
  const spawnSignaling = () => env.spawn('signaling', { MEDIA_CONTROL_URL: controlUrl });
  // Two signaling processes: A carries the calls, B is there to reconcile when a third one is killed.
  const sigA = spawnSignaling();
  const sigB = spawnSignaling();
  await Promise.all([sigA.ready(), sigB.ready()]);
  const A = softphoneUrl(sigA);
  const rx = await startReceiver(t);
  const browser = await launchChromium(t);

  const org = await callOrg(env);
  await subscribeCalls(env, rx, org, ['new_call', 'call_completed']);

  const webrtcTicket = async (o: CallOrg, to: string, key = o.api_key) => {
    const r = await env.request('POST', '/v1/webrtc-token', { key, body: { from_number: o.from, to_number: to } });
    if (r.status !== 201) throw new Error(`webrtc-token: ${r.status} ${r.text}`);
    return r.body.data as { token: string; call_id: string };
  };
  const open = async (t: Test, token: string, signaling = A) => {
    const w = await openPage(browser, t);
    await w.page.goto(`${env.url}/softphone?token=${encodeURIComponent(token)}&autostart=1&signaling=${encodeURIComponent(signaling)}`);
    return w;
  };
  const state = (page: Page) => page.evaluate(() => window.softphone.state);
  /** Waits until RTP flows both ways in the page and the far end echoes; returns the page's counters. */
  const audioFlows = async (t: Test, page: Page, callId: string) => {
    const first = await pageEventually(page, async () => {
      const s = await window.softphone.stats();
      return s.packetsSent >= 50 && s.packetsReceived >= 50 ? s : null;
    }, 60_000);
    const far = await eventually(async () => {
      const s = await mediaClient.stats(callId);
      return s.farEnd?.phase === 'echo' && s.farEnd.echoPacketsSent >= 25 ? s : null;
    }, 60_000, 200);
    t.ok(first.packetsSent >= 50 && first.packetsReceived >= 50, `page counts RTP both ways (sent ${first.packetsSent}, received ${first.packetsReceived})`);
    t.ok(far.browser.in.packets > 0, `media got the browser's audio (${far.browser.in.packets} packets)`);
    t.ok(far.farEnd!.tonePacketsSent > 0, `the far end played its tone (${far.farEnd!.tonePacketsSent} packets)`);
    t.ok(far.farEnd!.echoPacketsSent >= 25, `the far end echoes the browser (${far.farEnd!.echoPacketsSent} packets)`);
    t.ok(far.browser.out.packets > far.farEnd!.tonePacketsSent, `media sent tone + echo to the browser (${far.browser.out.packets} packets)`);
    return first;
  };
  const sessionGone = (callId: string) =>
    eventually(async () => !(await mediaClient.listSessions()).sessions.some((s) => s.callId === callId), 30_000, 100);

  t.test('path A: client token → ticket → page dials; audio both ways (echo); hang up; COMPLETED; webhooks', async (t) => {
    const minted = await env.request('POST', '/v1/client-tokens', { key: org.api_key, body: { from_numbers: [org.from] } });
    t.equal(minted.status, 201, 'client token minted');
    const { token, call_id } = await webrtcTicket(org, '+14155550008', minted.body.data.token);
    const { page, problems } = await open(t, token);
    await pageEventually(page, () => window.softphone.state === 'answered', 60_000);
    t.equal(await page.evaluate(() => window.softphone.callId), call_id);
    const s1 = await audioFlows(t, page, call_id);
    // The counters grow between two reads a few seconds apart.
    const s2 = await pageEventually(page, async () => {
      const s = await window.softphone.stats();
      return s.packetsSent > 0 ? s : null;
    });
    await new Promise((r) => setTimeout(r, 1500));
    const s3 = await page.evaluate(() => window.softphone.stats());
    t.ok(s3.packetsSent > s2.packetsSent && s3.packetsReceived > s1.packetsReceived, `counters grow (${JSON.stringify(s3)})`);

    await page.evaluate(() => window.softphone.hangup());
    t.equal(await state(page), 'ended');
    t.match(await page.evaluate(() => window.softphone.error), null);
    const c = await settled(env, org, call_id, 30_000);
    t.match(c, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'api_hangup' });
    t.ok(c.duration_seconds > 0, `duration ${c.duration_seconds} s`);
    await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 30_000);
    t.pass('channel released');
    await sessionGone(call_id);
    t.pass('media session closed');
    const d = await eventually(async () => {
      const x = deliveriesFor(rx, call_id);
      return x.new_call && x.call_completed ? x : null;
    }, 60_000);
    t.equal(d.new_call.length, 1, 'new_call webhook');
    t.equal(d.call_completed.length, 1, 'call_completed webhook');

    const again = await Phone.connect(A);
    again.send({ type: 'hello', v: 1, ticket: token });
    t.match(await again.frame('error'), { code: 'ticket_used' }, 'ticket reuse fails');
    t.same(problems, [], 'no console errors');
  });

  t.test('sandbox outcomes reach the page as ended with their status', async (t) => {
    for (const [to, status] of [['+14155550001', 'BUSY'], ['+14155550002', 'NO_ANSWER'], ['+14155550004', 'FAILED']] as const) {
      const { token, call_id } = await webrtcTicket(org, to);
      const { page } = await open(t, token);
      const ended = await pageEventually(page, () => window.softphone.state === 'ended' && window.softphone.ended, 60_000);
      const c = await settled(env, org, call_id, 30_000);
      t.equal(c.status, status, `${to}: ${status}`);
      t.match(ended, { status, callOutcome: c.call_outcome, failureCode: c.failure_code, error: null }, `${to}: the page's end report`);
      await sessionGone(call_id);
    }
    await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 30_000);
  });

  t.test('closing the page before the answer: CANCELED, connection_unconfirmed', async (t) => {
    const { token, call_id } = await webrtcTicket(org, '+14155550002'); // rings 3 s
    const { page } = await open(t, token);
    await pageEventually(page, () => window.softphone.state === 'ringing', 60_000);
    await page.close();
    const c = await settled(env, org, call_id, 30_000);
    t.match(c, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'setup_abandoned' });
    await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 30_000);
    await sessionGone(call_id);
    t.pass('channel and media session released');
  });

  t.test('path B: the room token attaches to the placed call; audio both ways; hang up', async (t) => {
    const r = await env.request('POST', '/v1/room-token', { key: org.api_key, body: { from_number: org.from, to_number: '+14155550008' } });
    t.equal(r.status, 201);
    const { token, call_id } = r.body.data;
    const { page } = await open(t, token);
    await pageEventually(page, () => window.softphone.state === 'answered', 60_000);
    await audioFlows(t, page, call_id);
    await page.evaluate(() => window.softphone.hangup());
    const c = await settled(env, org, call_id, 30_000);
    t.match(c, { status: 'COMPLETED', disconnection_reason: 'api_hangup' });
    await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 30_000);
    await sessionGone(call_id);
  });

  t.test('signaling killed mid-call: the reconciler ends the call (COMPLETED browser_hangup), media closed', async (t) => {
    const sigC: Proc = spawnSignaling();
    await sigC.ready();
    const { token, call_id } = await webrtcTicket(org, '+14155550008');
    const { page } = await open(t, token, softphoneUrl(sigC));
    await pageEventually(page, () => window.softphone.state === 'answered', 60_000);
    await pageEventually(page, async () => (await window.softphone.stats()).packetsReceived > 0, 60_000);
    await sigC.kill('SIGKILL');
    const c = await settled(env, org, call_id, 60_000);
    t.match(c, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'browser_hangup' });
    await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 30_000);
    await sessionGone(call_id);
    t.pass('channel released, media session closed by the reconciler');
    t.match(await pageEventually(page, () => window.softphone.state === 'ended' && window.softphone.error), { code: 'connection_lost' });
  });

  t.test('media killed mid-call: the call ends COMPLETED media_lost, the page hears ended', async (t) => {
    const { token, call_id } = await webrtcTicket(org, '+14155550008');
    const { page } = await open(t, token);
    await pageEventually(page, () => window.softphone.state === 'answered', 60_000);
    await pageEventually(page, async () => (await window.softphone.stats()).packetsReceived > 0, 60_000);
    await media.kill('SIGKILL');
    const ended = await pageEventually(page, () => window.softphone.state === 'ended' && window.softphone.ended, 60_000);
    const c = await settled(env, org, call_id, 30_000);
    t.match(c, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'media_lost' });
    t.match(ended, { status: 'COMPLETED', disconnectionReason: 'media_lost', error: null });
    await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 30_000);
    t.pass('channel released');

    // Without media a new call cannot carry audio: it ends at once instead of ringing a phone nobody can hear.
    const next = await webrtcTicket(org, '+14155550008');
    const p = await Phone.connect(A);
    p.send({ type: 'hello', v: 1, ticket: next.token });
    t.match(await p.frame('ended'), { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'media_lost' });
    t.notOk(p.types().includes('welcome'), 'no welcome without a media session');
    await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 30_000);
  });
}
