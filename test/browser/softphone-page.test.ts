// The softphone page in real Chromium (Debian's, fake audio devices): it loads clean and idle, the fake microphone
// captures, and a ticket the signaling socket rejects ends the call with the error shown.
import t from 'tap';
import { startGateway } from '../../gateway/start.ts';
import { createLogger } from '../../shared/log.ts';
import { chromiumSkip, launchChromium, openPage, pageEventually } from '../helpers/browser.ts';
import { testEnv } from '../helpers/env.ts';
import { startWsPeer } from '../helpers/ws-peer.ts';

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  const env = await testEnv(t);
  const browser = await launchChromium(t);

  t.test('the page loads without errors and is idle', async (t) => {
    const { page, problems } = await openPage(browser, t);
    await page.goto(`${env.url}/softphone`);
    await pageEventually(page, () => !!window.softphone);
    t.equal(await page.evaluate(() => window.softphone.state), 'idle');
    t.equal(await page.evaluate(() => window.softphone.callId), null);
    t.same(await page.evaluate(() => window.softphone.stats()), { packetsSent: 0, packetsReceived: 0, bytesReceived: 0, packetsLost: 0, jitter: null, roundTripTime: null });
    t.equal(await page.textContent('#state'), 'idle');
    t.ok(await page.isEnabled('#start'), 'Start is enabled');
    t.ok(await page.isDisabled('#hangup'), 'Hang up is disabled while idle');
    t.equal(await page.evaluate(() => typeof (window as any).Openline?.Softphone), 'function', 'the SDK is exposed as Openline');
    t.same(problems, [], 'no console errors, page errors or failed requests');
  });

  t.test('the fake microphone gives a live audio track that carries sound', async (t) => {
    const { page, problems } = await openPage(browser, t);
    await page.goto(`${env.url}/softphone`);
    const track = await page.evaluate(async () => {
      const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
      (window as any).mic = stream;
      const tr = stream.getAudioTracks()[0];
      return { count: stream.getAudioTracks().length, kind: tr.kind, readyState: tr.readyState, label: tr.label };
    });
    t.equal(track.count, 1);
    t.equal(track.kind, 'audio');
    t.equal(track.readyState, 'live');
    // The fake device beeps periodically: wait until an analyser hears something other than silence.
    await page.evaluate(() => {
      const ctx = new AudioContext();
      const analyser = ctx.createAnalyser();
      ctx.createMediaStreamSource((window as any).mic).connect(analyser);
      const buf = new Float32Array(analyser.fftSize);
      (window as any).peak = 0;
      setInterval(() => {
        analyser.getFloatTimeDomainData(buf);
        for (const v of buf) (window as any).peak = Math.max((window as any).peak, Math.abs(v));
      }, 20);
    });
    const peak = await pageEventually(page, () => ((window as any).peak > 0.01 ? (window as any).peak : 0));
    t.ok(peak > 0.01, `the microphone carries sound (peak ${peak})`);
    t.same(problems, []);
  });

  t.test('?token=…&autostart=1 dials at once; a rejected ticket ends the call with the error shown', async (t) => {
    const peer = await startWsPeer(t, (msg, socket) => {
      if (msg.type === 'hello') {
        socket.send({ type: 'error', code: 'invalid_token', message: 'unknown ticket' });
        socket.close(4001, 'invalid_token');
      }
    });
    const { page, problems } = await openPage(browser, t);
    const states: string[] = [];
    await page.exposeFunction('recordState', (s: string) => { states.push(s); });
    await page.addInitScript(() => {
      // Records every state the page shows, so the test sees the path and not only the end.
      new MutationObserver(() => (window as any).recordState(document.querySelector('#state')?.textContent))
        .observe(document, { subtree: true, characterData: true, childList: true });
    });
    await page.goto(`${env.url}/softphone?token=bogus&autostart=1&signaling=${encodeURIComponent(peer.url)}`);
    await pageEventually(page, () => window.softphone?.state === 'ended');

    t.same(await peer.next('hello'), { type: 'hello', v: 1, ticket: 'bogus' }, 'the token went out as a ticket');
    t.same(await page.evaluate(() => window.softphone.error), { code: 'invalid_token', message: 'unknown ticket' });
    t.equal(await page.evaluate(() => window.softphone.callId), null);
    t.ok(await page.isVisible('#error'), 'the error is shown');
    t.match(await page.textContent('#error'), 'invalid_token: unknown ticket');
    t.equal(await page.textContent('#state'), 'ended');
    t.ok(states.includes('connecting'), `went through connecting (${states.join(' → ')})`);
    t.ok(await page.isEnabled('#start'), 'Start is enabled again');
    t.notMatch(page.url(), /token=|autostart/, 'the single-use ticket left the address bar');
    t.match(await page.textContent('#log'), /connecting to ws:\/\/127\.0\.0\.1/);
    t.same(peer.received.map((m) => m.type), ['hello'], 'nothing else was sent');
    t.same(problems, []);
  });

  t.test('without ?signaling the page dials the URL the gateway was configured with (SIGNALING_PUBLIC_URL)', async (t) => {
    const peer = await startWsPeer(t, (msg, socket) => {
      if (msg.type === 'hello') {
        socket.send({ type: 'error', code: 'ticket_used', message: 'already redeemed' });
        socket.close(4001, 'ticket_used');
      }
    });
    const g = await startGateway({ ...env.config, signalingPublicUrl: peer.url }, createLogger('gateway', 'silent'));
    t.teardown(() => g.stop());
    const { page, problems } = await openPage(browser, t);
    await page.goto(`${g.url}/softphone?token=olwt_once&autostart=1`);
    await pageEventually(page, () => window.softphone.state === 'ended');
    t.same(await peer.next('hello'), { type: 'hello', v: 1, ticket: 'olwt_once' });
    t.match(await page.evaluate(() => window.softphone.error), { code: 'ticket_used' });
    t.same(problems, []);
  });
}
