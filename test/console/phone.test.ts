// The console's Phone page in real Chromium (fake microphone) against a real gateway, workers, signaling and media
// (mediasoup) over loopback with the sandbox carrier: sign in, open Phone, pick the caller ID, a bad number is
// refused with a message, dial the sandbox's answering number with the dial pad and paste, the call connects, RTP
// flows both ways (the page's quality figures and the media process's counters), mute toggles, hang up, the call
// shows in Calls with its timeline. The ticket is minted through the session (cookie + X-CSRF-Token); without the
// CSRF header the same request is refused. axe-core finds no serious or critical violation on the page.
import { createServer } from 'node:net';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { startMedia } from '../helpers/media.ts';
import { createUser } from '../../shared/users/members.ts';
import { chromiumSkip, launchChromium, openPage } from '../helpers/browser.ts';
import { eventually, ROOT } from '../helpers/env.ts';
import { callEnv, callOrg, settled } from '../calls/helpers.ts';

const PASSWORD = 'correct horse battery staple';
const SHOTS = join(ROOT, 'test-output', 'console');

/** A free TCP port: the gateway's config and the signaling process must agree on it (the ticket names it). */
const freePort = () => new Promise<number>((resolve, reject) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const port = (s.address() as { port: number }).port;
    s.close(() => resolve(port));
  }).on('error', reject);
});

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  mkdirSync(SHOTS, { recursive: true });
  // Sandbox at 0.1: +14155550008 answers and talks (a tone, then an echo of the browser) until hung up.
  const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.1', SIGNALING_PORT: String(await freePort()) });
  const { controlUrl, client: mediaClient } = await startMedia(t, env, { MEDIA_SANDBOX_TONE_MS: '500' });
  const signaling = env.spawn('signaling', { MEDIA_CONTROL_URL: controlUrl });
  await signaling.ready();
  const org = await callOrg(env, {}, { org: 'Phone Dental' });
  await createUser(env.db, { organizationId: org.organization_id, email: 'agent.phone@example.com', role: 'agent', password: PASSWORD });
  const browser = await launchChromium(t);

  const axe = async (t: Test, page: Page, name: string) => {
    const r = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).analyze();
    const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    t.same(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`), [], `${name}: no serious or critical axe violation`);
  };
  const stat = async (page: Page, name: string) => Number(await page.locator(`[data-stat="${name}"]`).textContent());

  await t.test('an agent calls from the Phone page: connects, audio both ways, mute, hang up, the call in Calls', async (t) => {
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${env.url}/console/`);
    await page.getByLabel('Email').fill('agent.phone@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Calls', level: 1 }).waitFor();

    // Without X-CSRF-Token the session cannot mint a ticket.
    const noCsrf = await page.evaluate(async (from) => (await fetch('/v1/webrtc-token', { method: 'POST', credentials: 'same-origin',
      headers: { 'content-type': 'application/json' }, body: JSON.stringify({ from_number: from, to_number: '+14155550008' }) })).status, org.from);
    t.equal(noCsrf, 403, 'a session write without X-CSRF-Token is refused');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Phone' }).click();
    await page.getByRole('heading', { name: 'Phone', level: 1 }).waitFor();
    const callerId = page.getByLabel('Caller ID');
    await callerId.waitFor();
    await callerId.selectOption(org.from);
    t.equal(await callerId.inputValue(), org.from, 'the organization\'s active number is offered as caller ID');
    await axe(t, page, 'phone');
    await page.screenshot({ path: join(SHOTS, 'phone-1280.png'), fullPage: true });

    // A number that is not E.164: a clear message, no call.
    await page.getByLabel('Number to call').fill('4155550008');
    await page.getByRole('button', { name: 'Call', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'international (E.164) form' }).waitFor();
    t.pass('a number without + is refused with a message');

    // Paste-style input (spaces and dashes dropped), then the last digit from the dial pad.
    await page.getByLabel('Number to call').fill('+1 415-555-000');
    const pad = page.getByRole('group', { name: 'Dial pad' });
    await pad.getByRole('button', { name: '8', exact: true }).click();
    await page.getByRole('button', { name: 'Call', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Answered' }).waitFor({ timeout: 60_000 });
    t.equal(await page.getByLabel('Number to call').inputValue(), '+14155550008', 'the number as dialed');

    // Audio both ways: the page's figures rise, and the media process saw the browser's audio and echoed it.
    const before = await eventually(async () => {
      const [sent, received] = [await stat(page, 'sent'), await stat(page, 'received')];
      return sent >= 50 && received >= 50 ? { sent, received } : null;
    }, 60_000, 250);
    await new Promise((r) => setTimeout(r, 2000));
    const after = { sent: await stat(page, 'sent'), received: await stat(page, 'received') };
    t.ok(after.sent > before.sent && after.received > before.received, `packet counters rise on the page (${JSON.stringify(before)} → ${JSON.stringify(after)})`);
    const callId = await page.evaluate(async () => {
      const r = await (await fetch('/v1/calls?limit=1', { credentials: 'same-origin' })).json();
      return r.data[0].id as string;
    });
    const far = await eventually(async () => {
      const s = await mediaClient.stats(callId);
      return s.farEnd?.phase === 'echo' && s.farEnd.echoPacketsSent >= 25 ? s : null;
    }, 60_000, 200);
    t.ok(far.browser.in.packets > 0 && far.farEnd!.echoPacketsSent >= 25, `media got the browser's audio and echoed it (${far.browser.in.packets} in, ${far.farEnd!.echoPacketsSent} echoed)`);
    t.match(await page.locator('[data-stat="jitter"]').textContent(), /ms|—/, 'jitter shown');
    t.match(await page.locator('[data-stat="rtt"]').textContent(), /ms|—/, 'round trip shown');
    t.match(await page.getByRole('timer', { name: 'Call time' }).textContent(), /^\d\d:\d\d$/, 'a call timer');
    await eventually(async () => (await page.getByRole('timer', { name: 'Call time' }).textContent()) !== '00:00', 10_000, 200);
    t.pass('the timer runs');
    await axe(t, page, 'phone in a call');
    await page.screenshot({ path: join(SHOTS, 'phone-call-1280.png'), fullPage: true });

    const mute = page.getByRole('button', { name: 'Mute' });
    await mute.click();
    t.equal(await page.getByRole('button', { name: 'Unmute' }).getAttribute('aria-pressed'), 'true', 'muted: aria-pressed true');
    await page.getByRole('button', { name: 'Unmute' }).click();
    t.equal(await page.getByRole('button', { name: 'Mute' }).getAttribute('aria-pressed'), 'false', 'unmuted again');

    await page.getByRole('button', { name: 'Hang up' }).click();
    await page.getByRole('status').filter({ hasText: /^Ended: COMPLETED/ }).waitFor({ timeout: 30_000 });
    t.pass(`ended, with the reason: ${await page.getByRole('status').filter({ hasText: /^Ended/ }).textContent()}`);
    const c = await settled(env, org, callId, 30_000);
    t.match(c, { status: 'COMPLETED', call_outcome: 'answered', to_number: '+14155550008', from_number: org.from });

    await page.getByRole('link', { name: 'View this call' }).click();
    await page.getByRole('heading', { name: 'Call to +14155550008' }).waitFor();
    const steps = await page.getByRole('region', { name: 'Timeline' }).getByRole('listitem').allTextContents();
    t.ok(steps.some((s) => /Answered/.test(s)) && steps.some((s) => /Ended: COMPLETED/.test(s)), 'the call\'s timeline: answered, ended');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Calls' }).click();
    await page.getByRole('table', { name: 'Call log' }).getByRole('link').first().waitFor();
    t.pass('the call is in the call log');
    t.same(problems.filter((p) => !/401|403/.test(p)), [], 'no console errors or failed requests (but the signed-out 401 and the refused write)');
  });

  await t.test('microphone denied: a clear message and no call placed', async (t) => {
    const { page } = await openPage(browser, t);
    await page.goto(`${env.url}/console/`);
    await page.getByLabel('Email').fill('agent.phone@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Calls', level: 1 }).waitFor();
    // The browser refuses the microphone as a denied permission does.
    await page.evaluate(() => {
      navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException('Permission denied', 'NotAllowedError'));
    });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Phone' }).click();
    await page.getByLabel('Number to call').fill('+14155550008');
    const calls = await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [org.organization_id]);
    await page.getByRole('button', { name: 'Call', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'Microphone access is blocked' }).waitFor();
    const again = await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [org.organization_id]);
    t.equal(again.n, calls.n, 'no call was placed');
  });
}
