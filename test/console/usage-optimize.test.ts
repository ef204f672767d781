// The console's Usage and Optimize pages in Chromium against a real gateway and workers, found by label and role.
// Usage: after real sandbox calls (spawned workers) the spend-per-day chart's text alternative holds today's spend as
// the API answers it, the monthly one this month's, and the meters show the daily spend cap and the plan's minutes.
// Optimize: a running test with three days of counts shows each variant's rate, interval and cumulative daily rates;
// a draft is started, the running test paused and a variant shipped, each checked through the API. A viewer sees
// both pages without a write control and the API refuses their write. axe-core: no serious or critical violation;
// at 390 px wide neither page scrolls sideways.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { Browser, Page } from 'playwright-core';
import { createUser } from '../../shared/users/members.ts';
import { setPlan } from '../../shared/usage/plan.ts';
import { setLimits } from '../../shared/calls/limits.ts';
import { axeClean, signInConsole } from '../helpers/console.ts';
import { chromiumSkip, launchChromium, openPage } from '../helpers/browser.ts';
import { eventually, ROOT } from '../helpers/env.ts';
import { callEnv, callOrg, dial, settled } from '../calls/helpers.ts';

const PASSWORD = 'correct horse battery staple';
const SHOTS = join(ROOT, 'test-output', 'console');
const money = (cents: number) => `$${(cents / 100).toFixed(2)}`;

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  mkdirSync(SHOTS, { recursive: true });
  const { env } = await callEnv(t);
  const org = await callOrg(env, {}, { org: 'Usage Dental' });
  const key = org.api_key;
  await createUser(env.db, { organizationId: org.organization_id, email: 'owner.usage@example.com', role: 'owner', password: PASSWORD });
  await createUser(env.db, { organizationId: org.organization_id, email: 'viewer.usage@example.com', role: 'viewer', password: PASSWORD });
  await setPlan(env.db, org.organization_id, { includedMinutes: 50 });
  await setLimits(env.db, org.organization_id, { allow_countries: ['MX', 'GB'] });
  const browser: Browser = await launchChromium(t);

  // Usage: two sandbox bridge calls that answer, talk and end (a minute on each leg).
  for (const to of ['+14155554567', '+14155554568']) {
    const r = await dial(env, org, to);
    if (r.status !== 202) throw new Error(`dial: ${r.status} ${r.text}`);
    await settled(env, org, r.body.data.call_id, 120_000);
  }
  const today = (await env.request('GET', '/v1/usage/summary', { key })).body.data.today.period as string;
  const usageToday = await eventually(async () => {
    const d = (await env.request('GET', `/v1/usage?from=${today}&to=${today}`, { key })).body.data[0];
    return d.spend_cents.total > 0 && d.minutes.total === 4 ? d : null;
  }, 30_000);

  // Optimize: a running test with three days of counts (below the 100-visitor minimum: it stays collecting), and a draft.
  const prop = (await env.request('POST', '/v1/optimize/properties', { key, body: { domain: 'shop.example.com', name: 'Shop' } })).body.data;
  if (!prop?.id) throw new Error('property not registered');
  const mkTest = async (name: string, start: boolean) => {
    const r = await env.request('POST', '/v1/optimize/tests', { key, body: {
      name, page_url: 'https://shop.example.com/', goal: { type: 'cta_click', selector: '#cta' }, start,
      variants: [{ name: 'Control' }, { name: 'Green button', ops: [{ op: 'setText', selector: '#cta', value: 'Buy now' }] }] } });
    if (r.status !== 201) throw new Error(`create test: ${r.status} ${r.text}`);
    return r.body.data as { id: string; variants: { id: string; name: string }[] };
  };
  const running = await mkTest('Homepage CTA', true);
  const draft = await mkTest('Checkout copy', false);
  const day = (n: number) => new Date(Date.parse(`${today}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);
  const [control, green] = running.variants.map((v) => v.id);
  // Control 3 of 30 a day; Green 6 of 30: cumulative 10 % and 20 % after three days.
  for (const d of [day(2), day(1), day(0)]) {
    await env.db.none(`INSERT INTO optimize_daily_counts (test_id, variant_id, day, impressions, conversions, revenue_cents)
      VALUES ($1, $2, $4, 30, 3, 0), ($1, $3, $4, 30, 6, 0)`, [running.id, control, green, d]);
  }
  const statusOf = async (id: string) => (await env.request('GET', `/v1/optimize/tests/${id}`, { key })).body.data;

  const axe = axeClean;
  /** Screenshots at 1280 and 390 px; at 390 the page must not scroll sideways. */
  const shoot = async (t: Test, page: Page, name: string) => {
    for (const [w, h] of [[1280, 900], [390, 844]] as const) {
      await page.setViewportSize({ width: w, height: h });
      await page.waitForTimeout(100); // a frame for the charts' ResizeObserver (the check below is what must hold)
      if (w === 390) {
        const wide = await page.evaluate(() => ({
          scroll: document.documentElement.scrollWidth, view: window.innerWidth,
          // What sticks out, for the failure message.
          // What makes it scroll, for the failure message: the elements whose removal ends the scrolling.
          over: document.documentElement.scrollWidth <= window.innerWidth ? [] : [...document.querySelectorAll('main *')].filter((e) => {
            const el = e as HTMLElement;
            const was = el.style.display;
            el.style.display = 'none';
            const fits = document.documentElement.scrollWidth <= window.innerWidth;
            el.style.display = was;
            return fits;
          }).map((e) => `${e.tagName.toLowerCase()}.${e.className}`),
        }));
        t.ok(wide.scroll <= wide.view, `${name} at 390 px: no horizontal scrolling (${wide.scroll} <= ${wide.view}) ${wide.over.join(', ')}`);
      }
      await page.screenshot({ path: join(SHOTS, `${name}-${w}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  };
  const signIn = (page: Page, email: string) => signInConsole(page, env.url, email, PASSWORD);
  const nav = (page: Page, name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).click();
  /** The cells of a table's row whose header cell is `rowName`. */
  const rowCells = async (page: Page, table: string, rowName: string | RegExp) =>
    page.getByRole('table', { name: table, exact: true }).getByRole('row').filter({ has: page.getByRole('rowheader', { name: rowName }) }).first()
      .getByRole('cell').allTextContents();

  await t.test('owner: Usage shows spend per day and month from the text alternatives, the cap and the plan', async (t) => {
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await signIn(page, 'owner.usage@example.com');
    await nav(page, 'Usage');
    await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
    const daily = page.getByRole('table', { name: 'Spend per day (last 30 days), values', exact: true });
    await daily.waitFor({ state: 'attached' });
    t.equal(await daily.getByRole('row').count(), 31, 'thirty days and the header row');
    const todayName = await page.evaluate((d) => new Date(`${d}T00:00:00Z`).toLocaleDateString(undefined, { dateStyle: 'medium', timeZone: 'UTC' }), today);
    t.same(await rowCells(page, 'Spend per day (last 30 days), values', todayName),
      [String(usageToday.calls.total), String(usageToday.minutes.total), '0', money(usageToday.spend_cents.total)],
      'today\'s calls, minutes, SMS and spend as the API answers them');
    const chart = page.getByRole('img', { name: /^Spend per day \(last 30 days\): / });
    t.match(await chart.getAttribute('aria-label'), new RegExp(`${money(usageToday.spend_cents.total).replace('$', '\\$')} in all`), 'the chart\'s name sums it up');
    t.equal(await chart.locator('canvas').count(), 1, 'uPlot drew the chart');
    const monthName = await page.evaluate((m) => new Date(`${m}-01T00:00:00Z`).toLocaleDateString(undefined, { month: 'long', year: 'numeric', timeZone: 'UTC' }), today.slice(0, 7));
    const month = (await env.request('GET', `/v1/usage?from=${today.slice(0, 7)}-01&to=${today}&granularity=month`, { key })).body.data[0];
    t.same(await rowCells(page, 'Spend per month (last 12 months), values', monthName),
      [String(month.calls.total), String(month.minutes.total), '0', money(month.spend_cents.total)], 'this month in the monthly table');
    t.equal(await page.getByRole('table', { name: 'Spend per month (last 12 months), values', exact: true }).getByRole('row').count(), 13);

    const cap = page.getByLabel('Daily spend cap');
    t.equal(Number(await cap.getAttribute('value')), usageToday.spend_cents.total, 'the cap meter holds today\'s spend');
    t.equal(Number(await cap.getAttribute('max')), 100_000_000);
    t.match(await page.locator('#meter-spend-text').textContent(), `${money(usageToday.spend_cents.total)} of $1000000.00 spent today`);
    const minutes = page.getByLabel('Voice minutes this month');
    t.equal(Number(await minutes.getAttribute('value')), 4, 'four billed minutes used');
    t.equal(Number(await minutes.getAttribute('max')), 50, 'of the plan\'s 50');
    t.match(await page.locator('#meter-minutes-text').textContent(), '4 of 50 included minutes used (8 %); 46 left');
    const limits = (await env.request('GET', '/v1/usage/summary', { key: org.api_key })).body.data.limits;
    const channels = page.getByLabel('Channels in use');
    t.equal(Number(await channels.getAttribute('max')), limits.channel_limit, 'the channel meter holds the channel limit');
    t.match(await page.locator('#meter-channels-text').textContent(), `of ${limits.channel_limit} channels held right now`);
    t.ok(await page.getByText(`At most ${limits.calls_per_minute} new calls per minute`).isVisible(), 'the call rate limit is said');
    t.same(limits.allow_countries, ['GB', 'MX']);
    t.same(await page.getByRole('list', { name: 'Other countries allowed' }).getByRole('listitem').allTextContents(),
      await page.evaluate((codes) => codes.map((c) => `${new Intl.DisplayNames(undefined, { type: 'region' }).of(c)} (${c})`), limits.allow_countries as string[]),
      'the countries allowed beyond the US and Canada, by name, as the API lists them');

    // The values table can be shown on request, and is keyboard-reachable.
    await page.getByRole('button', { name: 'Show the values of Spend per day (last 30 days), values' }).click();
    await page.getByRole('region', { name: 'Spend per day (last 30 days), values' }).waitFor();
    await axe(t, page, 'usage');
    await shoot(t, page, 'usage');
    t.same(problems.filter((p) => !/401/.test(p)), [], 'no console errors or failed requests');
  });

  await t.test('owner: Optimize shows per-variant rates and intervals; start, pause and ship work', async (t) => {
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await signIn(page, 'owner.usage@example.com');
    await nav(page, 'Optimize');
    const tests = page.getByRole('table', { name: 'Website tests' });
    await tests.waitFor();
    t.equal(await tests.getByRole('row').count(), 3, 'two tests and the header row');

    await page.getByRole('button', { name: 'Results of Homepage CTA' }).click();
    const variants = page.getByRole('table', { name: 'Variants of Homepage CTA' });
    await variants.waitFor();
    t.same((await rowCells(page, 'Variants of Homepage CTA', 'Control (control)')).slice(0, 4), ['90', '9', '10.0 %', '5.4 % – 17.9 %'], 'control: 9 of 90, Wilson interval');
    t.same((await rowCells(page, 'Variants of Homepage CTA', 'Green button')).slice(0, 5), ['90', '18', '20.0 %', '13.0 % – 29.4 %', '+100.0 %'], 'green: 18 of 90, lift');
    await page.getByText('Decision: collecting.').waitFor();
    const chart = page.getByRole('img', { name: /^Cumulative conversion rate per variant by day/ });
    t.match(await chart.getAttribute('aria-label'), 'Control 10.0 %, Green button 20.0 %');
    t.equal(await chart.locator('canvas').count(), 1, 'uPlot drew the chart');
    const over = page.getByRole('table', { name: 'Conversion rate per variant by day', exact: true });
    t.equal(await over.getByRole('row').count(), 7, 'three days × two variants and the header row');
    const firstDay = over.getByRole('row').nth(2).getByRole('cell');
    t.same(await firstDay.allTextContents(), ['Green button', '30', '6', '20.0 %', '9.5 % – 37.3 %'], 'the first day: 6 of 30 with its interval');
    const lastGreen = over.getByRole('row').nth(6).getByRole('cell');
    t.same(await lastGreen.allTextContents(), ['Green button', '90', '18', '20.0 %', '13.0 % – 29.4 %'], 'cumulative by the third day');
    await axe(t, page, 'optimize results');
    await shoot(t, page, 'optimize');

    await page.getByRole('button', { name: 'Pause test' }).click();
    await page.getByRole('status').filter({ hasText: 'Paused Homepage CTA.' }).waitFor();
    t.equal((await statusOf(running.id)).status, 'paused', 'the API holds it paused');
    await page.getByRole('button', { name: 'Resume test' }).waitFor();

    await page.getByLabel('Variant to ship').selectOption({ label: 'Green button' });
    await page.getByRole('button', { name: 'Ship…' }).click();
    const confirm = page.getByRole('dialog', { name: 'Ship this variant?' });
    await axe(t, page, 'optimize ship dialog');
    await confirm.getByRole('button', { name: 'Ship variant' }).click();
    await page.getByRole('status').filter({ hasText: 'Shipped Green button of Homepage CTA' }).waitFor();
    t.match(await statusOf(running.id), { status: 'shipped', shipped_variant_id: green }, 'the API holds the shipped variant');
    t.equal(await page.getByRole('button', { name: /^(Pause|Resume) test$|^Ship…$/ }).count(), 0, 'a shipped test has nothing left to do');

    await page.getByRole('button', { name: 'Results of Checkout copy' }).click();
    await page.getByText('No visitors counted yet. Start the test').waitFor();
    await page.getByRole('button', { name: 'Start test' }).click();
    await page.getByRole('status').filter({ hasText: 'Started Checkout copy.' }).waitFor();
    t.equal((await statusOf(draft.id)).status, 'running', 'the draft is running');
    t.same(problems.filter((p) => !/401/.test(p)), [], 'no console errors or failed requests');
  });

  await t.test('viewer: both pages without write controls; the API refuses', async (t) => {
    const { page } = await openPage(browser, t);
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, 'viewer.usage@example.com');
    await nav(page, 'Usage');
    await page.getByRole('table', { name: 'Spend per day (last 30 days), values', exact: true }).waitFor({ state: 'attached' });
    await axe(t, page, 'viewer usage');
    await nav(page, 'Optimize');
    await page.getByRole('button', { name: 'Results of Checkout copy' }).click();
    await page.getByRole('table', { name: 'Variants of Checkout copy' }).waitFor();
    t.equal(await page.getByRole('button', { name: /^(Start|Pause|Resume) test$|^Ship/ }).count(), 0, 'no start, pause or ship');
    t.equal(await page.getByLabel('Variant to ship').count(), 0, 'no ship form');
    await axe(t, page, 'viewer optimize');
    const wide = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    t.ok(wide, 'the viewer\'s Optimize page at 390 px does not scroll sideways');
    const status = await page.evaluate(async (id) => {
      const s = await (await fetch('/v1/session', { credentials: 'same-origin' })).json();
      const r = await fetch(`/v1/optimize/tests/${id}`, { method: 'PATCH', credentials: 'same-origin',
        headers: { 'content-type': 'application/json', 'x-csrf-token': s.data.csrf_token }, body: JSON.stringify({ status: 'paused' }) });
      return r.status;
    }, draft.id);
    t.equal(status, 403, 'the API refuses the viewer\'s pause');
    t.equal((await statusOf(draft.id)).status, 'running', 'still running');
  });
}
