// The console's Numbers, Webhooks and call pages in Chromium against a real gateway and workers, and a screenshot of
// every page. Numbers: Number Health state with its reasons and the Number Sets per number, release after a
// confirmation (the API agrees). Webhooks: "Send test event" reaches the receiver signed and its attempt is listed.
// Call page: the webhook deliveries the call caused. A viewer has no release or test button. Screenshots of every
// page (sign-in, each page of the main navigation, a call) at 1280 px and 390 px land in
// os.tmpdir()/openline-console-screenshots (printed; not committed). axe-core: no serious violation on each.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { createSet } from '../../shared/number-health/sets.ts';
import { createUser } from '../../shared/users/members.ts';
import { axeClean, signInConsole } from '../helpers/console.ts';
import { chromiumSkip, launchChromium, openPage } from '../helpers/browser.ts';
import { eventually } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { callEnv, callOrg, dial, settled } from '../calls/helpers.ts';

const PASSWORD = 'correct horse battery staple';
export const SHOTS = join(tmpdir(), 'openline-console-screenshots');

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  mkdirSync(SHOTS, { recursive: true });
  const { env } = await callEnv(t);
  const rx = await startReceiver(t);
  const org = await callOrg(env, {}, { org: 'Shots Dental', numbers: 2 });
  const { user: owner } = await createUser(env.db, { organizationId: org.organization_id, email: 'owner.shots@example.com', role: 'owner', password: PASSWORD });
  await createUser(env.db, { organizationId: org.organization_id, email: 'viewer.shots@example.com', role: 'viewer', password: PASSWORD });
  const numbers = (await env.request('GET', '/v1/phone-numbers', { key: org.api_key })).body.data as { id: number; phone_number: string; status: string }[];
  const member = numbers.find((n) => n.phone_number === org.from)!;
  const spare = numbers.find((n) => n.phone_number !== org.from)!;
  await createSet(env.db, org.organization_id, owner.id, { name: 'Appointment reminders', members: [{ phone_id: member.id, role: 'PRIMARY' }] });
  const browser: Browser = await launchChromium(t);

  const axe = axeClean;
  const written: string[] = [];
  const shoot = async (page: Page, name: string) => {
    for (const [w, h] of [[1280, 800], [390, 844]] as const) {
      await page.setViewportSize({ width: w, height: h });
      const path = join(SHOTS, `${name}-${w}.png`);
      await page.screenshot({ path, type: 'png', fullPage: w === 390 });
      written.push(path);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  };
  const signIn = (page: Page, email: string) => signInConsole(page, env.url, email, PASSWORD);
  const nav = (page: Page, name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();

  await t.test('Numbers: Number Health and Number Sets per number; release after a confirmation', async (t) => {
    const { page } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 800 });
    await signIn(page, 'owner.shots@example.com');
    await nav(page, 'Numbers');
    const table = page.getByRole('table', { name: 'Phone numbers' });
    await table.waitFor();
    const row = table.getByRole('row').filter({ hasText: org.from });
    await row.getByText('Appointment reminders').waitFor();
    t.match(await row.textContent(), /Appointment reminders\s*\(primary, active\)/, 'the set, its role and state');
    const fleet = (await env.request('GET', '/v1/number-health/numbers', { key: org.api_key })).body.data as
      { phone_id: number; evidence_state: string; health_warning: string | null }[];
    const evidence = fleet.find((f) => f.phone_id === member.id)!;
    t.ok(evidence, 'the API has evidence for the number');
    if (evidence.health_warning) await row.getByText(evidence.health_warning).waitFor();
    t.pass(`the health state (${evidence.evidence_state}) and its reason are shown`);
    await axe(t, page, 'numbers with health');

    await page.getByRole('button', { name: `Release ${spare.phone_number}` }).click();
    const confirm = page.getByRole('dialog', { name: `Release ${spare.phone_number}?` });
    await confirm.waitFor();
    await axe(t, page, 'release confirmation');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    t.equal((await env.request('GET', `/v1/phone-numbers/${spare.id}`, { key: org.api_key })).body.data.status, 'ACTIVE', 'cancel releases nothing');
    await page.getByRole('button', { name: `Release ${spare.phone_number}` }).click();
    await confirm.getByRole('button', { name: 'Release number' }).click();
    await page.getByRole('status').filter({ hasText: `Released ${spare.phone_number}` }).waitFor();
    await table.getByRole('row').filter({ hasText: spare.phone_number }).getByText('RELEASED').waitFor();
    t.equal(await page.getByRole('button', { name: `Release ${spare.phone_number}` }).count(), 0, 'a released number has no release button');
    t.equal((await env.request('GET', `/v1/phone-numbers/${spare.id}`, { key: org.api_key })).body.data.status, 'RELEASED', 'the API agrees');
  });

  let callId = '';
  await t.test('Webhooks: Send test event; the call page lists the deliveries its call caused', async (t) => {
    const { page } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 800 });
    await signIn(page, 'owner.shots@example.com');
    const made = await env.request('POST', '/api/v1/webhook_subscriptions', { key: org.api_key, body: { webhook_url: rx.url('/shots'), event_type: 'call_completed' } });
    t.equal(made.status, 201, made.text);
    const secret = made.body.data.secret as string;
    await nav(page, 'Webhooks');
    await page.getByRole('button', { name: `Send a test event to ${rx.url('/shots')} (call_completed)` }).click();
    await page.getByRole('status').filter({ hasText: 'Sent a test event' }).waitFor();
    const [req] = await rx.waitForCount(1, { path: '/shots' });
    t.match(rx.verify(req, secret), { event_type: 'webhook.test', data: { test: true } }, 'the receiver got a signed test event');
    const attempts = page.getByRole('table', { name: 'Delivery attempts' });
    await eventually(async () => {
      await page.getByRole('button', { name: 'Refresh deliveries' }).click();
      return (await attempts.getByRole('row').filter({ hasText: 'webhook.test' }).filter({ hasText: 'succeeded' }).count()) > 0 || undefined;
    }, 15_000, 300);
    t.pass('its attempt is listed as succeeded');
    await axe(t, page, 'webhooks after a test event');

    const placed = await dial(env, org, '+14155554567');
    t.equal(placed.status, 202, placed.text);
    callId = placed.body.data.call_id as string;
    await settled(env, org, callId, 60_000);
    await rx.waitFor(() => rx.unique('/shots').some((r) => r.body?.event_type === 'call_completed' && r.body?.data?.id === callId));
    await page.goto(`${env.url}/console/calls/${callId}`);
    const mine = page.getByRole('table', { name: 'Webhook deliveries of this call' });
    await eventually(async () => {
      await page.getByRole('button', { name: 'Refresh webhook deliveries' }).click();
      return (await mine.getByRole('row').filter({ hasText: 'call_completed' }).filter({ hasText: 'succeeded' }).count()) > 0 || undefined;
    }, 15_000, 300);
    t.equal(await mine.getByRole('row').filter({ hasText: 'webhook.test' }).count(), 0, 'the test event is not this call\'s');
    await axe(t, page, 'call with deliveries');
  });

  await t.test('viewer: no release and no test button', async (t) => {
    const { page } = await openPage(browser, t);
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, 'viewer.shots@example.com');
    await nav(page, 'Numbers');
    await page.getByRole('table', { name: 'Phone numbers' }).waitFor();
    t.equal(await page.getByRole('button', { name: /^Release / }).count(), 0, 'no release');
    await nav(page, 'Webhooks');
    await page.getByRole('table', { name: 'Webhook subscriptions' }).waitFor();
    t.equal(await page.getByRole('button', { name: /^Send a test event/ }).count(), 0, 'no test event');
    const subs = (await env.request('GET', '/api/v1/webhook_subscriptions', { key: org.api_key })).body.data as { id: string }[];
    const status = await page.evaluate(async (id) => {
      const s = await (await fetch('/v1/session', { credentials: 'same-origin' })).json();
      const r = await fetch(`/api/v1/webhook_subscriptions/${id}/test`, { method: 'POST', credentials: 'same-origin', headers: { 'x-csrf-token': s.data.csrf_token } });
      return r.status;
    }, subs[0].id);
    t.equal(status, 403, 'the API refuses the viewer\'s test event');
  });

  await t.test('screenshots of every page at 1280 px and 390 px', async (t) => {
    const { page } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${env.url}/console/`);
    await page.getByRole('heading', { name: 'Sign in to Openline' }).waitFor();
    await shoot(page, 'sign-in');
    await signIn(page, 'owner.shots@example.com');
    const links = page.getByRole('navigation', { name: 'Main' }).getByRole('link');
    const names = (await links.allTextContents()).map((s) => s.trim()).filter(Boolean);
    t.ok(names.length >= 6, `every page of the main navigation: ${names.join(', ')}`);
    for (const name of names) {
      await nav(page, name);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      // What the page loads is in place once no "Loading …" line is left.
      await eventually(async () => (await page.locator('.loading').count()) === 0 || undefined, 15_000, 100).catch(() => undefined);
      await shoot(page, name.toLowerCase().replace(/[^a-z0-9]+/g, '-'));
    }
    if (callId) {
      await page.goto(`${env.url}/console/calls/${callId}`);
      await page.getByRole('heading', { name: 'Call to +14155554567' }).waitFor();
      await page.getByRole('table', { name: 'Webhook deliveries of this call' }).waitFor();
      await shoot(page, 'call');
    }
    t.ok(written.length >= 2 * (names.length + 1), `${written.length} screenshots`);
    console.log(`# console screenshots: ${SHOTS}`);
  });
}
