// The console's Numbers and Webhooks pages in Chromium against a real gateway and workers, found by label and role:
// an owner changes a number's inbound routing and name, buys a sandbox number, subscribes a receiver to two events
// (secrets shown once), sees a delivery with its status code after a call, deletes a subscription; a viewer sees
// both pages without a single write control. axe-core: no serious or critical violation on each.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { createUser } from '../../shared/users/members.ts';
import { axeClean, signInConsole } from '../helpers/console.ts';
import { chromiumSkip, launchChromium, openPage } from '../helpers/browser.ts';
import { eventually, ROOT } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { callEnv, callOrg, dial } from '../calls/helpers.ts';

const PASSWORD = 'correct horse battery staple';
const SHOTS = join(ROOT, 'test-output', 'console');

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  mkdirSync(SHOTS, { recursive: true });
  const { env } = await callEnv(t);
  const rx = await startReceiver(t);
  const org = await callOrg(env, {}, { org: 'Pages Dental' });
  await createUser(env.db, { organizationId: org.organization_id, email: 'owner.pages@example.com', role: 'owner', password: PASSWORD });
  await createUser(env.db, { organizationId: org.organization_id, email: 'viewer.pages@example.com', role: 'viewer', password: PASSWORD });
  const browser: Browser = await launchChromium(t);

  const axe = axeClean;
  const shoot = async (page: Page, name: string) => {
    for (const [w, h] of [[1280, 900], [390, 844]] as const) {
      await page.setViewportSize({ width: w, height: h });
      await page.screenshot({ path: join(SHOTS, `${name}-${w}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  };
  const signIn = (page: Page, email: string) => signInConsole(page, env.url, email, PASSWORD);
  const nav = (page: Page, name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).click();
  const numbersOf = async () => (await env.request('GET', '/v1/phone-numbers', { key: org.api_key })).body.data as { phone_number: string; inbound: string; name: string }[];

  await t.test('owner: Numbers (settings, buy) and Webhooks (subscribe, deliveries, delete)', async (t) => {
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await signIn(page, 'owner.pages@example.com');

    // --- Numbers ---
    await nav(page, 'Numbers');
    await page.getByRole('heading', { name: 'Numbers', level: 1 }).waitFor();
    const table = page.getByRole('table', { name: 'Phone numbers' });
    await table.waitFor();
    const row = table.getByRole('row').filter({ hasText: org.from });
    await row.getByText('Ring softphones').waitFor();
    await axe(t, page, 'numbers');
    await shoot(page, 'numbers');
    await page.getByRole('button', { name: `Settings of ${org.from}` }).click();
    const dialog = page.getByRole('dialog', { name: `Settings of ${org.from}` });
    await dialog.waitFor();
    await axe(t, page, 'number settings');
    await shoot(page, 'number-settings');
    await dialog.getByLabel('Inbound calls').selectOption('reject');
    await dialog.getByLabel('Name', { exact: true }).fill('Front desk');
    await dialog.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: `Saved the settings of ${org.from}.` }).waitFor();
    await row.getByText('Reject').waitFor();
    const changed = (await numbersOf()).find((n) => n.phone_number === org.from)!;
    t.match(changed, { inbound: 'reject', name: 'Front desk' }, 'the API holds the new settings');

    await page.getByLabel('Area code').selectOption('212');
    await page.getByRole('button', { name: 'Search numbers' }).click();
    const found = page.getByRole('list', { name: 'Numbers free to buy' });
    await found.waitFor();
    const buy = found.getByRole('button', { name: /^Buy \+1212/ }).first();
    const bought = (await buy.textContent())!.replace('Buy ', '');
    await buy.click();
    await page.getByRole('status').filter({ hasText: `Bought ${bought}` }).waitFor();
    await table.getByRole('row').filter({ hasText: bought }).waitFor();
    t.ok((await numbersOf()).some((n) => n.phone_number === bought), 'the bought number is the organization\'s');

    // --- Webhooks ---
    await nav(page, 'Webhooks');
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await page.getByText('No subscriptions yet.').waitFor();
    await axe(t, page, 'webhooks, empty');
    const url = rx.url('/console-hooks');
    await page.getByLabel('Webhook URL').fill(url);
    await page.getByRole('checkbox', { name: 'new_call', exact: true }).check();
    await page.getByRole('checkbox', { name: 'call_completed', exact: true }).check();
    await page.getByRole('button', { name: 'Subscribe' }).click();
    const secret = page.getByLabel('Signing secret for new_call');
    await secret.waitFor();
    t.match(await secret.inputValue(), /^whsec_/, 'each subscription\'s secret is shown once');
    t.match(await page.getByLabel('Signing secret for call_completed').inputValue(), /^whsec_/);
    await axe(t, page, 'webhooks, secrets');
    await page.getByRole('button', { name: 'Done' }).click();
    const subs = page.getByRole('table', { name: 'Webhook subscriptions' });
    t.equal(await subs.getByRole('row').count(), 3, 'two subscriptions and the header row');

    const placed = await dial(env, org, '+14155554567');
    t.equal(placed.status, 202, placed.text);
    await rx.waitFor(() => rx.unique().some((r) => r.body?.event_type === 'new_call'));
    await page.getByRole('button', { name: `Deliveries of new_call to ${url}` }).click();
    const deliveries = page.getByRole('table', { name: 'Delivery attempts' });
    await eventually(async () => {
      await page.getByRole('button', { name: 'Refresh deliveries' }).click();
      return (await deliveries.getByRole('row').filter({ hasText: 'succeeded' }).count()) > 0 || undefined;
    }, 15_000, 300);
    const attempt = deliveries.getByRole('row').filter({ hasText: 'succeeded' }).first();
    t.match(await attempt.textContent(), /succeeded\s*200/, 'the delivery with the receiver\'s status code');
    await axe(t, page, 'webhooks, deliveries');
    await shoot(page, 'webhooks');

    await page.getByRole('button', { name: `Delete call_completed to ${url}` }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete this subscription?' });
    await confirm.getByRole('button', { name: 'Delete subscription' }).click();
    await page.getByRole('status').filter({ hasText: 'Deleted the subscription' }).waitFor();
    t.equal(await subs.getByRole('row').count(), 2, 'one subscription left');
    const left = await env.request('GET', '/api/v1/webhook_subscriptions', { key: org.api_key });
    t.same(left.body.data.map((s: { event_type: string }) => s.event_type), ['new_call'], 'the API agrees');
    t.same(problems.filter((p) => !/401/.test(p)), [], 'no console errors or failed requests (but the signed-out 401)');
  });

  await t.test('viewer: both pages without write controls', async (t) => {
    const { page } = await openPage(browser, t);
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, 'viewer.pages@example.com');
    await nav(page, 'Numbers');
    await page.getByRole('table', { name: 'Phone numbers' }).waitFor();
    t.equal(await page.getByRole('button', { name: /^Settings of/ }).count(), 0, 'no settings button');
    t.equal(await page.getByRole('button', { name: 'Search numbers' }).count(), 0, 'no buying');
    t.equal(await page.getByRole('heading', { name: 'Buy a number' }).count(), 0);
    await axe(t, page, 'viewer numbers');
    await nav(page, 'Webhooks');
    await page.getByRole('table', { name: 'Webhook subscriptions' }).waitFor();
    t.equal(await page.getByLabel('Webhook URL').count(), 0, 'no subscribe form');
    t.equal(await page.getByRole('button', { name: /^(Delete|Re-enable) / }).count(), 0, 'no delete or re-enable');
    await page.getByRole('button', { name: /^Deliveries of new_call/ }).click();
    await page.getByRole('table', { name: 'Delivery attempts' }).waitFor();
    t.pass('the deliveries can be read');
    await axe(t, page, 'viewer webhooks');
    // The API refuses the viewer's writes too.
    const status = await page.evaluate(async () => {
      const s = await (await fetch('/v1/session', { credentials: 'same-origin' })).json();
      const r = await fetch('/api/v1/webhook_subscriptions', { method: 'POST', credentials: 'same-origin',
        headers: { 'content-type': 'application/json', 'x-csrf-token': s.data.csrf_token },
        body: JSON.stringify({ webhook_url: 'https://example.com/x', event_type: 'new_call' }) });
      return r.status;
    });
    t.equal(status, 403, 'the API refuses the viewer\'s write');
  });
}
