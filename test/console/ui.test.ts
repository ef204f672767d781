// The console's web front end in real Chromium (Debian's, driven by playwright-core) against a real gateway and
// workers over loopback: how /console is served, sign-in by label (wrong password, then right), an API key created in
// the UI whose plaintext works against the API and stops working once revoked in the UI, a viewer without
// create/revoke buttons whose write the API refuses, the call log and a sandbox call's timeline. axe-core finds no
// serious or critical violation on any page; screenshots of each page land in test-output/console/ (gitignored).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { Browser, Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { createUser } from '../../shared/users/members.ts';
import { chromiumSkip, launchChromium, openPage } from '../helpers/browser.ts';
import { ROOT } from '../helpers/env.ts';
import { callEnv, callOrg, dial, settled } from '../calls/helpers.ts';

const PASSWORD = 'correct horse battery staple';
const SHOTS = join(ROOT, 'test-output', 'console');

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  mkdirSync(SHOTS, { recursive: true });
  const { env } = await callEnv(t);
  const org = await callOrg(env, {}, { org: 'UI Dental' });
  await createUser(env.db, { organizationId: org.organization_id, email: 'owner.ui@example.com', role: 'owner', password: PASSWORD });
  await createUser(env.db, { organizationId: org.organization_id, email: 'viewer.ui@example.com', role: 'viewer', password: PASSWORD });
  const browser: Browser = await launchChromium(t);

  /** axe-core on the page as it is now (WCAG 2.x A/AA rules): no serious or critical violation. */
  const axe = async (t: Test, page: Page, name: string) => {
    const r = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).analyze();
    const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    t.same(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`), [], `${name}: no serious or critical axe violation`);
  };
  const shoot = async (page: Page, name: string) => {
    for (const [w, h] of [[1280, 900], [390, 844]] as const) {
      await page.setViewportSize({ width: w, height: h });
      await page.screenshot({ path: join(SHOTS, `${name}-${w}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  };
  const signIn = async (page: Page, email: string, password = PASSWORD) => {
    await page.goto(`${env.url}/console/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };

  t.test('served at /console: hashed immutable assets, index.html no-cache, every page path answers the app', async (t) => {
    const index = await env.request('GET', '/console');
    t.equal(index.status, 200);
    t.match(index.headers['content-type'], /^text\/html/);
    t.equal(index.headers['cache-control'], 'no-cache');
    t.match(index.headers['content-security-policy'], /script-src 'self'/);
    const script = /src="(\/console\/assets\/index-[\w-]+\.js)"/.exec(index.text)?.[1];
    t.ok(script, 'index.html names a hashed script');
    const js = await env.request('GET', script!);
    t.equal(js.status, 200);
    t.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable');
    t.equal((await env.request('GET', script!, { headers: { 'if-none-match': js.headers.etag } })).status, 304);
    const deep = await env.request('GET', '/console/calls/0193a4d0-0000-7000-8000-000000000000');
    t.equal(deep.status, 200);
    t.equal(deep.text, index.text, 'a page path answers index.html');
    t.equal((await env.request('GET', '/console/assets/index-gone.js')).status, 404, 'a missing asset is a 404, not the page');
  });

  await t.test('owner: sign-in errors, API keys created, used and revoked, calls and a call timeline', async (t) => {
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${env.url}/console/`);
    await page.getByRole('heading', { name: 'Sign in to Openline' }).waitFor();
    await axe(t, page, 'sign-in');
    await shoot(page, 'sign-in');

    await signIn(page, 'owner.ui@example.com', 'not the password at all');
    await page.getByRole('alert').filter({ hasText: 'Wrong email or password.' }).waitFor();
    t.pass('a wrong password is shown as such');

    await signIn(page, 'owner.ui@example.com');
    await page.getByRole('heading', { name: 'Calls', level: 1 }).waitFor();
    t.match(page.url(), /\/console\/calls$/);

    // --- API keys ---
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByRole('table', { name: 'API keys' }).or(page.getByText('No API keys yet')).first().waitFor();
    await axe(t, page, 'api keys');
    await shoot(page, 'api-keys');
    await page.getByLabel('Name').fill('UI test key');
    await page.getByRole('checkbox', { name: 'calls:read', exact: true }).check();
    await page.getByRole('checkbox', { name: 'account:read', exact: true }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByLabel('API key', { exact: true });
    await shown.waitFor();
    const plaintext = await shown.inputValue();
    t.match(plaintext, /^olk_/, 'the plaintext is shown once');
    await t.resolves(page.getByRole('button', { name: 'Copy key' }).waitFor(), 'with a copy button');
    await axe(t, page, 'new key');
    await shoot(page, 'api-key-created');
    const acct = await fetch(`${env.url}/v1/account`, { headers: { authorization: `Bearer ${plaintext}` } });
    t.equal(acct.status, 200, 'the new key works against the API');
    const write = await fetch(`${env.url}/v1/calls/dial`, { method: 'POST', headers: { authorization: `Bearer ${plaintext}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from_number: org.from, to_number: '+14155554567', connect_number: '+14155550199' }) });
    t.equal(write.status, 403, 'and holds only the scopes chosen');
    await page.getByRole('button', { name: 'Done' }).click();

    await page.getByRole('button', { name: 'Revoke UI test key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke this API key?' });
    await dialog.waitFor();
    await axe(t, page, 'revoke dialog');
    await shoot(page, 'api-key-revoke');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('status').filter({ hasText: 'Revoked the key UI test key.' }).waitFor();
    const after = await fetch(`${env.url}/v1/account`, { headers: { authorization: `Bearer ${plaintext}` } });
    t.equal(after.status, 401, 'the API refuses the revoked key');

    // --- Calls ---
    const placed = await dial(env, org, '+14155554567');
    t.equal(placed.status, 202, placed.text);
    const callId = placed.body.data.call_id as string;
    const ended = await settled(env, org, callId, 60_000);
    t.equal(ended.status, 'COMPLETED');
    await page.getByRole('link', { name: 'Calls' }).click();
    await page.getByRole('heading', { name: 'Calls', level: 1 }).waitFor();
    await page.getByRole('table', { name: 'Call log' }).waitFor();
    t.equal(await page.getByRole('table', { name: 'Call log' }).getByRole('row').count(), 2, 'one call and the header row');
    await axe(t, page, 'calls');
    await shoot(page, 'calls');
    await page.getByLabel('Status').selectOption('BUSY');
    await page.getByText('No calls match these filters.').waitFor();
    t.pass('the status filter reaches the API');
    await page.getByLabel('Status').selectOption('COMPLETED');
    await page.getByRole('table', { name: 'Call log' }).getByRole('link').first().click();
    await page.getByRole('heading', { name: 'Call to +14155554567' }).waitFor();
    const timeline = page.getByRole('region', { name: 'Timeline' }).getByRole('listitem');
    await timeline.first().waitFor();
    const steps = await timeline.allTextContents();
    t.match(steps[0], /Accepted \(QUEUED\)/, 'the timeline starts when the call was accepted');
    t.ok(steps.some((s) => /Answered \(ANSWERED\)/.test(s)), 'shows the answer');
    t.ok(steps.some((s) => /Ended: COMPLETED/.test(s)), 'and the end with the final status');
    const times = await page.getByRole('region', { name: 'Timeline' }).locator('time').evaluateAll((ts) => ts.map((x) => Date.parse(x.getAttribute('datetime')!)));
    t.same(times, [...times].sort((a, b) => a - b), 'in time order');
    t.equal(await page.getByRole('table', { name: 'Legs' }).getByRole('row').count(), 3, 'both legs');
    await page.getByRole('region', { name: 'Transcript' }).getByText(/No transcript|:/).first().waitFor();
    await axe(t, page, 'call');
    await shoot(page, 'call');

    // --- Members ---
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('table', { name: 'Members' }).waitFor();
    await axe(t, page, 'members');
    await shoot(page, 'members');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Openline' }).waitFor();
    t.pass('signed out');
    t.same(problems.filter((p) => !/401/.test(p)), [], 'no console errors or failed requests (but the signed-out 401s)');
  });

  await t.test('viewer: no create or revoke buttons, and the API refuses the write', async (t) => {
    const { page } = await openPage(browser, t);
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, 'viewer.ui@example.com');
    await page.getByRole('heading', { name: 'Calls', level: 1 }).waitFor();
    await page.goto(`${env.url}/console/settings/api-keys`);
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByRole('table', { name: 'API keys' }).or(page.getByText('No API keys yet')).first().waitFor();
    t.equal(await page.getByRole('button', { name: 'Create key' }).count(), 0, 'no create button');
    t.equal(await page.getByRole('button', { name: /^Revoke/ }).count(), 0, 'no revoke button');
    await axe(t, page, 'viewer api keys');
    await page.screenshot({ path: join(SHOTS, 'viewer-api-keys-390.png'), fullPage: true });
    // The same session, writing through the API directly: refused by scope.
    const status = await page.evaluate(async () => {
      const s = await (await fetch('/v1/session', { credentials: 'same-origin' })).json();
      const r = await fetch('/v1/api-keys', { method: 'POST', credentials: 'same-origin',
        headers: { 'content-type': 'application/json', 'x-csrf-token': s.data.csrf_token },
        body: JSON.stringify({ name: 'sneaky', scopes: ['calls:read'] }) });
      return r.status;
    });
    t.equal(status, 403, 'the API refuses the viewer\'s write');
  });

  t.test('the lockout answers 429 and the page says so', async (t) => {
    const { page } = await openPage(browser, t);
    for (let i = 0; i < 5; i++) {
      await env.request('POST', '/v1/session', { body: { email: 'viewer.ui@example.com', password: 'wrong password here' } });
    }
    await signIn(page, 'viewer.ui@example.com');
    await page.getByRole('alert').filter({ hasText: /Too many failed sign-ins/ }).waitFor();
    t.pass('429 shown as a lockout');
  });
}
