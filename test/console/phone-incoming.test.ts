// Incoming calls on the console's Phone page in real Chromium (fake microphone) against the whole platform with the
// SIP trunk carrier (CARRIER=sip: the sandbox carrier's inbound simulation records a call whole and rings no browser).
// Two signed-in tabs of an agent listen (client tokens minted through the session); a Debian baresip phone calls the
// number: both tabs ring (a panel found by its heading, the live region announcing the caller), the first Accepts and
// gets the in-call view with RTP flowing both ways (the page's packet counters and the media process's), the other
// stops ringing; hang up completes the call. Then a SIPp caller: one tab Declines (it stops ringing there only), the
// other Declines too, and the call ends NO_ANSWER at its ring timeout. axe-core finds no serious violation, ringing
// or in a call. An owner (who may write calls) gets no "Simulate incoming call" form: that is the sandbox carrier's.
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { createUser } from '../../shared/users/members.ts';
import { axeClean, openPhone } from '../helpers/console.ts';
import { chromiumSkip, launchChromium, openPage } from '../helpers/browser.ts';
import { eventually } from '../helpers/env.ts';
import { endedCall, freePort, phoneSkip, sipPlatform, sippCaller, startPhone } from '../sip/helpers.ts';

const PASSWORD = 'correct horse battery staple';
const skip = phoneSkip || chromiumSkip;

if (skip) {
  t.plan(0, `skip: ${skip}`);
} else {
  const p = await sipPlatform(t, await freePort(), { SIP_INBOUND_RING_SECONDS: '12', SIGNALING_PORT: String(await freePort()) });
  const number = p.org.from;
  await createUser(p.env.db, { organizationId: p.org.organization_id, email: 'agent.incoming@example.com', role: 'agent', password: PASSWORD });
  const browser = await launchChromium(t);

  const axe = axeClean;
  const stat = async (page: Page, name: string) => Number(await page.locator(`[data-stat="${name}"]`).textContent());

  /** A tab signed in as the agent on the Phone page, listening for the number. */
  const phoneTab = async (t: Test) => {
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await openPhone(page, p.env.url, 'agent.incoming@example.com', PASSWORD, number);
    return { page, problems };
  };
  const incomingPanel = (page: Page) => page.getByRole('region', { name: 'Incoming call' });

  await t.test('a call rings two tabs; one accepts: a live call with audio both ways, the other stops ringing', async (t) => {
    const a = await phoneTab(t);
    const b = await phoneTab(t);
    await axe(t, a.page, 'phone listening');

    const caller = await startPhone(t, { name: '12125550199', ip: '127.0.0.1', toneHz: 1000, dial: `sip:${number}@127.0.0.1:${p.sipPort}` });
    for (const x of [a, b]) {
      await incomingPanel(x.page).waitFor({ timeout: 60_000 });
      t.match(await incomingPanel(x.page).textContent(), /Caller\s*\+12125550199.*Number called\s*\+\d+/s, 'the panel names the caller and the number called');
      await x.page.getByRole('status').filter({ hasText: 'Incoming call from +12125550199 to ' + number }).waitFor();
    }
    t.pass('both tabs ring, and the live region announces the caller');
    await axe(t, a.page, 'phone ringing');

    await incomingPanel(a.page).getByRole('button', { name: 'Accept' }).click();
    await a.page.getByRole('status').filter({ hasText: 'Answered' }).waitFor({ timeout: 60_000 });
    t.pass('accepted: the call is answered');
    await incomingPanel(b.page).waitFor({ state: 'detached', timeout: 30_000 });
    t.pass('the other tab stopped ringing');
    await b.page.getByRole('status').filter({ hasText: 'answered elsewhere' }).waitFor();
    t.equal(await incomingPanel(a.page).count(), 0, 'no panel on the tab that accepted');

    const before = await eventually(async () => {
      const [sent, received] = [await stat(a.page, 'sent'), await stat(a.page, 'received')];
      return sent >= 50 && received >= 50 ? { sent, received } : null;
    }, 60_000, 250);
    await new Promise((r) => setTimeout(r, 2000));
    const after = { sent: await stat(a.page, 'sent'), received: await stat(a.page, 'received') };
    t.ok(after.sent > before.sent && after.received > before.received, `packet counters rise on the page (${JSON.stringify(before)} → ${JSON.stringify(after)})`);
    const callId = (await p.env.db.one(`SELECT id FROM calls WHERE organization_id = $1 AND direction = 'inbound' ORDER BY id DESC LIMIT 1`, [p.org.organization_id])).id as string;
    const s = await eventually(async () => {
      const st = await p.media.stats(callId);
      const leg = st.carrierLegs[0];
      return leg && leg.fromFarEnd >= 100 && leg.toFarEnd >= 100 ? st : null;
    }, 60_000, 250);
    t.ok(s.carrierLegs[0].toFarEnd >= 100 && s.carrierLegs[0].fromFarEnd >= 100,
      `media carried the page's audio to the caller and the caller's to the page (${s.carrierLegs[0].toFarEnd} / ${s.carrierLegs[0].fromFarEnd} packets)`);
    await eventually(async () => (await a.page.getByRole('timer', { name: 'Call time' }).textContent()) !== '00:00', 10_000, 200);
    t.pass('the call timer runs');
    await axe(t, a.page, 'phone in an incoming call');
    t.match(await a.page.locator('.call-state + p').textContent(), /Incoming call from \+12125550199/);

    await a.page.getByRole('button', { name: 'Hang up' }).click();
    await a.page.getByRole('status').filter({ hasText: /^Ended: COMPLETED/ }).waitFor({ timeout: 30_000 });
    const c = await endedCall(p, callId);
    t.match(c, { status: 'COMPLETED', direction: 'inbound', picked_up: true, from_number: '+12125550199', to_number: number });
    void caller;
    // The tab that took the call listens again.
    await a.page.getByLabel('Incoming calls').filter({ hasText: `Incoming calls to ${number} ring here.` }).waitFor({ timeout: 30_000 });
    t.pass('the tab listens again after its call');
    t.same(a.problems.filter((x) => !/401/.test(x)), [], 'no console errors on the tab that accepted');
    t.same(b.problems.filter((x) => !/401/.test(x)), [], 'no console errors on the other tab');
  });

  await t.test('decline stops the ringing on that tab only; nobody accepts: NO_ANSWER', async (t) => {
    const a = await phoneTab(t);
    const b = await phoneTab(t);
    const done = sippCaller(t, p.sipPort, { to: number });
    await incomingPanel(a.page).waitFor({ timeout: 60_000 });
    await incomingPanel(b.page).waitFor({ timeout: 60_000 });
    await incomingPanel(b.page).getByRole('button', { name: 'Decline' }).click();
    await incomingPanel(b.page).waitFor({ state: 'detached', timeout: 10_000 });
    t.pass('declined: the tab stops ringing');
    await new Promise((r) => setTimeout(r, 500));
    t.equal(await incomingPanel(a.page).count(), 1, 'the other tab still rings');
    await incomingPanel(a.page).getByRole('button', { name: 'Decline' }).click();
    await incomingPanel(a.page).waitFor({ state: 'detached', timeout: 10_000 });
    const log = (await done).log;
    t.match(log, /^SIP\/2\.0 480 /m, 'the caller got 480 at the ring timeout');
    const id = (await p.env.db.one(`SELECT id FROM calls WHERE organization_id = $1 AND direction = 'inbound' ORDER BY id DESC LIMIT 1`, [p.org.organization_id])).id as string;
    t.match(await endedCall(p, id), { status: 'NO_ANSWER', failure_code: 'no_answer' });
  });

  await t.test('on the SIP carrier even an owner gets no "Simulate incoming call" (the sandbox\'s only)', async (t) => {
    await createUser(p.env.db, { organizationId: p.org.organization_id, email: 'owner.incoming@example.com', role: 'owner', password: PASSWORD });
    const { page } = await openPage(browser, t);
    await openPhone(page, p.env.url, 'owner.incoming@example.com', PASSWORD, number);
    const session = await page.evaluate(async () => (await (await fetch('/v1/session', { credentials: 'same-origin' })).json()).data);
    t.equal(session.carrier, 'sip', 'the session names the carrier');
    t.equal(await page.getByRole('form', { name: 'Simulate incoming call' }).count(), 0, 'no simulate form');
  });
}
