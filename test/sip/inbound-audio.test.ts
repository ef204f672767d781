// Two-way audio on an inbound SIP call taken by a browser: a Debian baresip phone on 127.0.0.1 (inside
// SIP_TRUNK_ALLOW) dials the platform's number straight at the SIP user agent, sending 1000 Hz and recording what it
// hears; the softphone page in Chromium (fake microphone: 440 Hz) listens with a client token and accepts. Its
// `welcome` carries the call's `sip` media session, whose SIP leg is the inbound one (`<callId>-destination`).
// Browser → caller: sox measures 440 Hz in baresip's recording. Caller → browser: media's counters, the page's RTP
// counters and a Web Audio analyser on the page's far-end track (1000 Hz). The page hangs up: BYE to the caller,
// the call COMPLETED, call_completed delivered.
//
// The SDK has no listen / accept API yet (docs/status.md): an init script wraps the page's WebSocket so that its
// hello carries the client token and the first `incoming` is accepted; from `welcome` on, the SDK runs the call as
// any other (transports, produce, consume through signaling and media, untouched).
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { chromium, type Browser } from 'playwright-core';
import { deliveriesFor } from '../calls/helpers.ts';
import { CHROMIUM_FLAGS, CHROMIUM_PATH, chromiumSkip, openPage, pageEventually, pageTone } from '../helpers/browser.ts';
import { eventually } from '../helpers/env.ts';
import { softphoneUrl } from '../signaling/softphone.ts';
import { endedCall, freePort, heardTone, phoneSkip, sipPlatform, startPhone } from './helpers.ts';

declare global { interface Window { inbound: { frames: Record<string, unknown>[] } } }

const skip = phoneSkip || chromiumSkip;
if (skip) {
  t.plan(0, `skip: ${skip}`);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'ol-sip-inaudio-'));
  const mic = join(dir, 'mic-440.wav');
  const sox = spawnSync('sox', ['-n', '-r', '48000', '-c', '1', '-b', '16', '-e', 'signed-integer', mic, 'synth', '120', 'sine', '440', 'vol', '0.5']);
  if (sox.status !== 0) throw new Error(`sox failed: ${sox.stderr}`);
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM_PATH, headless: true, timeout: 120_000, args: [...CHROMIUM_FLAGS, `--use-file-for-fake-audio-capture=${mic}`],
  });
  t.teardown(() => browser.close());

  // Nothing listens at the trunk's URI: the platform only receives this call.
  const p = await sipPlatform(t, await freePort(), { CLIENT_TOKEN_SECRET: 'd'.repeat(16) + 'inbound-audio-token-secret', SIP_INBOUND_RING_SECONDS: '30' });
  const number = p.org.from;

  /** `caller` dials the number offering `codecs` (its order of preference); the page accepts and talks. */
  const takeCall = async (t: Test, o: { caller: string; codecs: string }) => {
    const m = await p.env.request('POST', '/v1/client-tokens', { key: p.org.api_key, body: { from_numbers: [number] } });
    t.equal(m.status, 201, m.status === 201 ? 'client token minted' : m.text);
    const clientToken = m.body.data.token as string;

    const { page, problems } = await openPage(browser, t);
    await page.addInitScript({ content: listeningSocket(clientToken) });
    await page.goto(`${p.env.url}/softphone?token=olwt_inbound&autostart=1&signaling=${encodeURIComponent(softphoneUrl(p.signaling))}`);
    await pageEventually(page, () => window.inbound.frames.some((f) => f.type === 'listening'), 60_000)
      .catch(async (e) => { throw new Error(`${e.message}: ${JSON.stringify(await page.evaluate(() => window.inbound).catch(String))} ${JSON.stringify(problems)}`); });

    const caller = await startPhone(t, { name: o.caller.slice(1), ip: '127.0.0.1', toneHz: 1000, codecs: o.codecs, dial: `sip:${number}@127.0.0.1:${p.sipPort}` });
    const welcome = await pageEventually(page, () => window.inbound.frames.find((f) => f.type === 'welcome'), 60_000);
    const id = welcome.call_id as string;
    t.match(welcome, { path: 'inbound', media: { router_rtp_capabilities: { codecs: Array } } }, 'welcome carries the call\'s media');
    const incoming = await page.evaluate(() => window.inbound.frames.find((f) => f.type === 'incoming'));
    t.match(incoming, { call_id: id, from_number: o.caller, to_number: number });

    await pageEventually(page, () => window.softphone.state === 'answered', 60_000);
    const s = await eventually(async () => {
      const st = await p.media.stats(id);
      const leg = st.carrierLegs[0];
      return leg && leg.fromFarEnd >= 200 && leg.toFarEnd >= 200 && st.browser.in.packets >= 200 && st.browser.out.packets >= 200 ? st : null;
    }, 60_000, 250).catch((e) => { throw new Error(`${e.message}\ncaller:\n${caller.log().slice(-1500)}`); });
    t.same(s.carrierLegs.map((l) => l.legId), [`${id}-destination`], 'the session\'s one SIP leg is the inbound leg');
    t.equal(s.carrierLegs[0].codec, 'audio/PCMU', 'PCMU, the browser\'s codec');
    t.ok(s.carrierLegs[0].toFarEnd >= 200, `the browser's audio went to the caller (${s.carrierLegs[0].toFarEnd} packets)`);
    t.ok(s.browser.out.packets >= 200, `the caller's audio went on to the browser (${s.browser.out.packets} packets)`);
    const pageStats = await pageEventually(page, async () => {
      const x = await window.softphone.stats();
      return x.packetsReceived >= 150 && x.packetsSent >= 150 ? x : null;
    }, 30_000);
    t.ok(pageStats.packetsReceived >= 150, `the page received the caller's RTP (${JSON.stringify(pageStats)})`);
    const heardInPage = await pageTone(page);
    t.ok(heardInPage.hz > 950 && heardInPage.hz < 1050, `the page plays the caller's 1000 Hz (${JSON.stringify(heardInPage)})`);

    await page.evaluate(() => window.softphone.hangup());
    const c = await endedCall(p, id);
    t.match(c, { status: 'COMPLETED', direction: 'inbound', picked_up: true, call_outcome: 'answered' });
    await eventually(async () => deliveriesFor(p.rx, id).call_completed, 30_000);
    t.pass('call_completed delivered');
    await eventually(async () => !(await p.media.listSessions()).sessions.some((x) => x.callId === id), 30_000, 200);
    t.pass('media session closed');

    // baresip writes its recording's header when the call closes (our BYE).
    const heard = await heardTone(caller);
    t.ok(heard.hz > 400 && heard.hz < 480, `the caller heard the browser's 440 Hz (${heard.hz} Hz)`);
    t.ok(heard.rms > 0.05, `at a level above silence (RMS ${heard.rms})`);
    t.same(problems, [], 'no console errors');
  };

  t.test('baresip calls the number, the page accepts: audio both ways; the page hangs up, the call completes', (t) =>
    takeCall(t, { caller: '+12125550199', codecs: 'PCMU,PCMA' }));
  t.test('a caller that prefers PCMA but offers PCMU too is answered PCMU (the browser\'s codec): audio both ways', (t) =>
    takeCall(t, { caller: '+12125550198', codecs: 'PCMA,PCMU' }));
}

/** The page's WebSocket, listening: a plain script (tsx's helpers do not exist in the page). */
function listeningSocket(token: string): string {
  return `(() => {
  const Base = window.WebSocket;
  const token = ${JSON.stringify(token)};
  window.inbound = { frames: [] };
  class ListeningSocket extends Base {
    constructor(url, protocols) {
      super(url, protocols);
      this.handler = null;
      this.helloSent = false;
      super.onmessage = (ev) => {
        const f = JSON.parse(String(ev.data));
        window.inbound.frames.push(f);
        if (f.type === 'incoming') { Base.prototype.send.call(this, JSON.stringify({ type: 'accept', call_id: f.call_id })); return; }
        if (f.type === 'listening' || f.type === 'incoming_stopped') return;
        if (this.handler) this.handler.call(this, ev);
      };
    }
    get onmessage() { return this.handler; }
    set onmessage(fn) { this.handler = fn; }
    send(data) {
      // The SDK's hello (its ticket is a placeholder) becomes a listening hello with the client token.
      if (!this.helloSent && JSON.parse(data).type === 'hello') {
        this.helloSent = true;
        return Base.prototype.send.call(this, JSON.stringify({ type: 'hello', v: 1, client_token: token }));
      }
      return Base.prototype.send.call(this, data);
    }
  }
  window.WebSocket = ListeningSocket;
})();`;
}
