// Browser calls with CARRIER=sip, real two-way audio between Chromium and a SIP phone: the softphone page in Chromium
// (its fake microphone plays a 440 Hz file) dials through signaling, the workers place the SIP leg, the `sip` proxy of
// test/sip/helpers.ts hands the INVITE to a Debian baresip phone that auto-answers, plays 1000 Hz and records what it
// hears. Browser → phone: sox measures 440 Hz in baresip's recording. Phone → browser: the page's RTP counters (and
// media's counters of the leg and the browser consumer) grow, and a Web Audio analyser on the far end's track in the
// page finds 1000 Hz. Path A (ticket: the page dials) and path B (room
// token: the call is placed first, then the page attaches).
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_FLAGS, CHROMIUM_PATH, chromiumSkip, openPage, pageEventually, pageTone } from '../helpers/browser.ts';
import { eventually } from '../helpers/env.ts';
import { softphoneUrl } from '../signaling/softphone.ts';
import { endedCall, heardTone, phoneSkip, sipPlatform, startPhone, startRouter, type Phone } from './helpers.ts';

const skip = phoneSkip || chromiumSkip;
if (skip) {
  t.plan(0, `skip: ${skip}`);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'ol-sip-browser-'));
  const mic = join(dir, 'mic-440.wav');
  const sox = spawnSync('sox', ['-n', '-r', '48000', '-c', '1', '-b', '16', '-e', 'signed-integer', mic, 'synth', '120', 'sine', '440', 'vol', '0.5']);
  if (sox.status !== 0) throw new Error(`sox failed: ${sox.stderr}`);
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM_PATH, headless: true, timeout: 120_000, args: [...CHROMIUM_FLAGS, `--use-file-for-fake-audio-capture=${mic}`],
  });
  t.teardown(() => browser.close());

  const toA = '+12125557001';
  const toB = '+12125557002';
  const phoneA = await startPhone(t, { name: 'patha', ip: '127.0.0.1', toneHz: 1000 });
  const phoneB = await startPhone(t, { name: 'pathb', ip: '127.0.0.1', toneHz: 1000 });
  const router = await startRouter(t, { [toA]: phoneA, [toB]: phoneB });
  const p = await sipPlatform(t, router.port, { SIP_TRUNK_ALLOW: '127.0.0.0/8' }, router.ip);
  const signalingUrl = softphoneUrl(p.signaling);

  const openCall = async (t: Test, token: string) => {
    const w = await openPage(browser, t);
    await w.page.goto(`${p.env.url}/softphone?token=${encodeURIComponent(token)}&autostart=1&signaling=${encodeURIComponent(signalingUrl)}`);
    return w;
  };

  /** Audio both ways: 4 s of RTP through the leg each way and into the page; then the page hangs up and the phone's
   *  recording holds the browser's 440 Hz. */
  const talk = async (t: Test, page: Awaited<ReturnType<typeof openCall>>['page'], id: string, phone: Phone) => {
    await pageEventually(page, () => window.softphone.state === 'answered', 60_000);
    const s = await eventually(async () => {
      const st = await p.media.stats(id);
      const leg = st.carrierLegs[0];
      return leg && leg.fromFarEnd >= 200 && leg.toFarEnd >= 200 && st.browser.in.packets >= 200 && st.browser.out.packets >= 200 ? st : null;
    }, 60_000, 250);
    t.equal(s.carrierLegs.length, 1, 'one SIP leg in the call\'s session');
    t.equal(s.carrierLegs[0].codec, 'audio/PCMU', 'the leg carries PCMU, the browser\'s codec');
    t.ok(s.browser.in.packets >= 200, `media took the browser's audio (${s.browser.in.packets} packets)`);
    t.ok(s.carrierLegs[0].toFarEnd >= 200, `and sent it to the phone (${s.carrierLegs[0].toFarEnd} packets)`);
    t.ok(s.carrierLegs[0].fromFarEnd >= 200, `the phone's audio reached media (${s.carrierLegs[0].fromFarEnd} packets)`);
    t.ok(s.browser.out.packets >= 200, `and went on to the browser (${s.browser.out.packets} packets)`);
    const pageStats = await pageEventually(page, async () => {
      const x = await window.softphone.stats();
      return x.packetsReceived >= 150 && x.packetsSent >= 150 ? x : null;
    }, 30_000);
    t.ok(pageStats.packetsReceived >= 150, `the page received the phone's RTP (${JSON.stringify(pageStats)})`);
    const heardInPage = await pageTone(page);
    t.ok(heardInPage.hz > 950 && heardInPage.hz < 1050, `the page plays the phone's 1000 Hz (${JSON.stringify(heardInPage)})`);

    await page.evaluate(() => window.softphone.hangup());
    const c = await endedCall(p, id);
    t.match(c, { status: 'COMPLETED', call_outcome: 'answered' });
    await eventually(async () => !(await p.media.listSessions()).sessions.some((x) => x.callId === id), 30_000, 200);
    t.pass('media session closed');

    const heard = await heardTone(phone);
    t.ok(heard.hz > 400 && heard.hz < 480, `the phone heard the browser's 440 Hz (${heard.hz} Hz)`);
    t.ok(heard.rms > 0.05, `at a level above silence (RMS ${heard.rms})`);
  };

  t.test('path A: the page dials a SIP phone; audio both ways; the page hangs up', async (t) => {
    const r = await p.env.request('POST', '/v1/webrtc-token', { key: p.org.api_key, body: { from_number: p.org.from, to_number: toA } });
    t.equal(r.status, 201, r.text);
    const { token, call_id } = r.body.data;
    const { page, problems } = await openCall(t, token);
    await talk(t, page, call_id, phoneA);
    t.same(router.invites.filter((n) => n === toA), [toA], 'one INVITE reached the phone');
    t.same(problems, [], 'no console errors');
  });

  t.test('path B: the call is placed, then the page attaches with its room token; audio both ways', async (t) => {
    const r = await p.env.request('POST', '/v1/room-token', { key: p.org.api_key, body: { from_number: p.org.from, to_number: toB } });
    t.equal(r.status, 201, r.text);
    const { token, call_id } = r.body.data;
    const { page } = await openCall(t, token);
    await talk(t, page, call_id, phoneB);
  });
}

