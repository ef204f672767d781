// "Simulate incoming call" on the console's Phone page in real Chromium (fake microphone) against a real gateway,
// workers, signaling and media (mediasoup) with the sandbox carrier: an owner signs in, the page listens for the
// organization's number, the form posts POST /v1/sandbox/calls/inbound {ring: true}; the page rings (panel and live
// region), Accept gives the in-call view with the sandbox far end's audio arriving at the page (its packet counters
// and the media process's), Hang up completes the call. A bad caller number is refused in the form. An agent (no
// calls:write) sees no such form. axe-core finds no serious or critical violation with the form, ringing or in a call.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { startMedia } from '../helpers/media.ts';
import { createUser } from '../../shared/users/members.ts';
import { axeClean, openPhone } from '../helpers/console.ts';
import { chromiumSkip, launchChromium, openPage } from '../helpers/browser.ts';
import { eventually, ROOT } from '../helpers/env.ts';
import { freePort } from '../helpers/ports.ts';
import { callEnv, callOrg, settled } from '../calls/helpers.ts';

const PASSWORD = 'correct horse battery staple';
const SHOTS = join(ROOT, 'test-output', 'console');

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.1', SANDBOX_INBOUND_RING_SECONDS: '60', SIGNALING_PORT: String(await freePort()) });
  const { controlUrl, client: mediaClient } = await startMedia(t, env, { MEDIA_SANDBOX_TONE_MS: '500' });
  const signaling = env.spawn('signaling', { MEDIA_CONTROL_URL: controlUrl });
  await signaling.ready();
  const org = await callOrg(env, {}, { org: 'Ring Dental' });
  const number = org.from;
  await createUser(env.db, { organizationId: org.organization_id, email: 'owner.ring@example.com', role: 'owner', password: PASSWORD });
  await createUser(env.db, { organizationId: org.organization_id, email: 'agent.ring@example.com', role: 'agent', password: PASSWORD });
  const browser = await launchChromium(t);
  const stat = async (page: Page, name: string) => Number(await page.locator(`[data-stat="${name}"]`).textContent());

  const phonePage = async (t: Test, email: string) => {
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await openPhone(page, env.url, email, PASSWORD, number);
    return { page, problems };
  };
  const incomingPanel = (page: Page) => page.getByRole('region', { name: 'Incoming call' });

  await t.test('an owner simulates an incoming call: the page rings, Accept, audio from the far end, Hang up', async (t) => {
    const { page, problems } = await phonePage(t, 'owner.ring@example.com');
    const session = await page.evaluate(async () => (await (await fetch('/v1/session', { credentials: 'same-origin' })).json()).data);
    t.equal(session.carrier, 'sandbox', 'the session names the carrier');
    const form = page.getByRole('form', { name: 'Simulate incoming call' });
    await form.waitFor();
    await axeClean(t, page, 'phone with the simulate form');
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, 'phone-simulate-1280.png'), fullPage: true });

    t.equal(await form.getByLabel('Number to ring').inputValue(), number, 'the organization\'s number is offered');
    await form.getByLabel('Caller number').fill('2125550187');
    await form.getByRole('button', { name: 'Simulate incoming call' }).click();
    await form.getByRole('alert').filter({ hasText: 'international (E.164) form' }).waitFor();
    t.equal(await form.getByLabel('Caller number').getAttribute('aria-invalid'), 'true', 'the caller field is marked invalid');
    t.equal(await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [org.organization_id]).then((r) => r.n), 0, 'no call');

    await form.getByLabel('Caller number').fill('+1 212-555-0187');
    await form.getByLabel('Talk time (seconds)').fill('600');
    await form.getByRole('button', { name: 'Simulate incoming call' }).click();
    await incomingPanel(page).waitFor({ timeout: 30_000 });
    t.match(await incomingPanel(page).textContent(), new RegExp(`Caller\\s*\\+12125550187.*Number called\\s*\\${number}`, 's'), 'the panel names the caller and the number called');
    await page.getByRole('status').filter({ hasText: `Incoming call from +12125550187 to ${number}` }).waitFor();
    t.pass('the page rings and the live region announces the caller');
    await axeClean(t, page, 'phone ringing from a simulated call');

    await incomingPanel(page).getByRole('button', { name: 'Accept' }).click();
    await page.getByRole('status').filter({ hasText: 'Answered' }).waitFor({ timeout: 60_000 });
    t.pass('accepted: the call is answered');
    const callId = (await env.db.one(`SELECT id FROM calls WHERE organization_id = $1 AND direction = 'inbound' ORDER BY id DESC LIMIT 1`, [org.organization_id])).id as string;

    // The far end's audio (a tone, then an echo of the page's microphone) arrives at the page.
    const before = await eventually(async () => {
      const [sent, received] = [await stat(page, 'sent'), await stat(page, 'received')];
      return sent >= 50 && received >= 50 ? { sent, received } : null;
    }, 60_000, 250);
    const after = await eventually(async () => {
      const [sent, received] = [await stat(page, 'sent'), await stat(page, 'received')];
      return sent > before.sent + 25 && received > before.received + 25 ? { sent, received } : null;
    }, 30_000, 250);
    t.ok(after.received > before.received, `packet counters rise on the page (${JSON.stringify(before)} → ${JSON.stringify(after)})`);
    const far = await eventually(async () => {
      const s = await mediaClient.stats(callId);
      return s.farEnd?.phase === 'echo' && s.farEnd.echoPacketsSent >= 25 ? s : null;
    }, 60_000, 200);
    t.ok(far.browser.in.packets > 0 && far.farEnd!.echoPacketsSent >= 25,
      `media got the page's audio and the sandbox far end played back to it (${far.browser.in.packets} in, ${far.farEnd!.echoPacketsSent} echoed)`);
    await eventually(async () => (await page.getByRole('timer', { name: 'Call time' }).textContent()) !== '00:00', 10_000, 200);
    t.match(await page.locator('.call-state + p').textContent(), /Incoming call from \+12125550187/);
    await axeClean(t, page, 'phone in a simulated incoming call');

    await page.getByRole('button', { name: 'Hang up' }).click();
    await page.getByRole('status').filter({ hasText: /^Ended: COMPLETED/ }).waitFor({ timeout: 30_000 });
    const c = await settled(env, org, callId, 30_000);
    t.match(c, { status: 'COMPLETED', direction: 'inbound', picked_up: true, from_number: '+12125550187', to_number: number, disconnection_reason: 'api_hangup' });
    await page.getByLabel('Incoming calls').filter({ hasText: `Incoming calls to ${number} ring here.` }).waitFor({ timeout: 30_000 });
    t.pass('the page listens again after the call');
    t.same(problems.filter((x) => !/401/.test(x)), [], 'no console errors or failed requests');
  });

  await t.test('an agent (no calls:write) gets no simulate form', async (t) => {
    const { page } = await phonePage(t, 'agent.ring@example.com');
    t.equal(await page.getByRole('form', { name: 'Simulate incoming call' }).count(), 0, 'no form');
    t.equal(await page.getByRole('button', { name: 'Simulate incoming call' }).count(), 0, 'no button');
  });
}
