// The console's live updates in Chromium: the Calls page and a call's page follow GET /v1/calls/stream. A call dialed
// through the API appears at the top of the call log and its status moves to COMPLETED without a reload; a call's
// page moves from ANSWERED to COMPLETED (its timeline gains the end) when the call is hung up through the API.
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { createUser } from '../../shared/users/members.ts';
import { axeClean } from '../helpers/console.ts';
import { chromiumSkip, launchChromium, openPage } from '../helpers/browser.ts';
import { callEnv, callOrg, dial } from '../calls/helpers.ts';

const PASSWORD = 'correct horse battery staple';

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  // Sandbox seconds at 0.2: ringing 0.4 s, 2 s of talk, so the states can be seen on the page.
  const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.2' });
  const org = await callOrg(env, {}, { org: 'Live Dental' });
  await createUser(env.db, { organizationId: org.organization_id, email: 'owner.live@example.com', role: 'owner', password: PASSWORD });
  const browser: Browser = await launchChromium(t);

  const axe = axeClean;

  await t.test('Calls page: a dialed call appears and completes without a reload; a call page follows its call', async (t) => {
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${env.url}/console/`);
    await page.getByLabel('Email').fill('owner.live@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Calls', level: 1 }).waitFor();
    await page.getByText('No calls yet.').waitFor();
    const indicator = page.getByRole('status').filter({ hasText: /^Live: updates as calls progress$/ });
    await indicator.waitFor();
    t.pass('the live indicator says the page is live');
    await axe(t, page, 'calls, live');
    // A marker on the window: still there at the end means the page was never reloaded.
    await page.evaluate(() => { (window as unknown as { marker: number }).marker = 42; });

    const placed = await dial(env, org, '+14155554567');
    t.equal(placed.status, 202, placed.text);
    const log = page.getByRole('table', { name: 'Call log' });
    const row = log.getByRole('row').filter({ hasText: '+14155554567' });
    await row.waitFor({ timeout: 15_000 });
    t.pass('the new call appears in the call log');
    await row.getByText('COMPLETED').waitFor({ timeout: 30_000 });
    t.pass('and its status moves to COMPLETED');
    await row.getByText('$0.01').or(row.getByText(/\$0\.0\d/)).first().waitFor();
    t.equal(await log.getByRole('row').count(), 2, 'one call and the header row');
    t.equal(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 42, 'without a reload');

    // A call that stays answered: its page shows ANSWERED, then the end once it is hung up through the API.
    const forever = await dial(env, org, '+14155550008');
    t.equal(forever.status, 202, forever.text);
    const id = forever.body.data.call_id as string;
    const second = log.getByRole('row').filter({ hasText: '+14155550008' });
    await second.waitFor({ timeout: 15_000 });
    t.equal(await log.getByRole('row').nth(1).filter({ hasText: '+14155550008' }).count(), 1, 'the newest call is at the top');
    await second.getByText('ANSWERED').waitFor({ timeout: 30_000 });
    await second.getByRole('link').click();
    await page.getByRole('heading', { name: 'Call to +14155550008' }).waitFor();
    await indicator.waitFor();
    await page.locator('.row .status').filter({ hasText: 'ANSWERED' }).waitFor();
    const timeline = page.getByRole('region', { name: 'Timeline' });
    t.equal(await timeline.getByText(/Ended:/).count(), 0, 'no end in the timeline yet');
    await page.evaluate(() => { (window as unknown as { marker: number }).marker = 43; });
    const hung = await env.request('POST', `/v1/calls/${id}/hangup`, { key: org.api_key });
    t.equal(hung.status, 200, hung.text);
    await page.locator('.row .status').filter({ hasText: 'COMPLETED' }).waitFor({ timeout: 15_000 });
    await timeline.getByText(/Ended: COMPLETED \(api_hangup\)/).waitFor();
    t.pass('the call page moved to COMPLETED and its timeline shows the end');
    t.equal(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 43, 'without a reload');
    await axe(t, page, 'call, live');
    t.same(problems.filter((p) => !/401/.test(p)), [], 'no console errors or failed requests (but the signed-out 401 of the first page load)');
  });
}
