// The pages of the mailed links in Chromium against a real gateway: an invitation made through the API is read from
// the sandbox inbox, opened, a password set, and the new member lands signed in; the forgot-password link on the
// sign-in page mails a reset link, the reset page sets a new password, and signing in with it works; a used link says
// so. axe-core finds no serious or critical violation on these pages.
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { createUser } from '../../shared/users/members.ts';
import { chromiumSkip, launchChromium, openPage } from '../helpers/browser.ts';
import { eventually } from '../helpers/env.ts';
import { callEnv, callOrg } from '../calls/helpers.ts';

const PASSWORD = 'correct horse battery staple';

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  const { env } = await callEnv(t, {}, { workers: false });
  const org = await callOrg(env, {}, { org: 'Links Dental' });
  await createUser(env.db, { organizationId: org.organization_id, email: 'owner.links@example.com', role: 'owner', password: PASSWORD });
  const browser = await launchChromium(t);
  const axe = async (t: Test, page: Page, name: string) => {
    const r = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).analyze();
    const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    t.same(bad.map((v) => `${v.id}: ${v.help}`), [], `${name}: no serious or critical axe violation`);
  };
  const mail = (email: string, kind: string) => eventually(async () =>
    (await env.request('GET', `/v1/sandbox/inbox?email=${encodeURIComponent(email)}`, { key: org.api_key })).body.data
      .find((e: { kind: string }) => e.kind === kind) as { text: string } | undefined, 15_000, 100);
  const linkIn = (text: string) => /(https?:\/\/\S+#token=[A-Za-z0-9_-]+)/.exec(text)![1];

  await t.test('invitation: API invite → inbox → link → password → signed in', async (t) => {
    const owner = await env.request('POST', '/v1/session', { body: { email: 'owner.links@example.com', password: PASSWORD } });
    const cookie = /ol_session=[^;]+/.exec(String(owner.headers['set-cookie']))![0];
    const inv = await env.request('POST', '/v1/members', { headers: { cookie, 'x-csrf-token': owner.body.data.csrf_token },
      body: { email: 'new.agent@example.com', role: 'agent' } });
    t.equal(inv.status, 201, inv.text);
    const link = linkIn((await mail('new.agent@example.com', 'invitation')).text);
    t.match(link, `${env.url}/console/accept-invitation#token=`);

    const { page, problems } = await openPage(browser, t);
    const urls: string[] = [];
    page.on('request', (r) => urls.push(r.url()));
    await page.goto(link);
    await page.getByRole('heading', { name: 'Join your team on Openline' }).waitFor();
    await axe(t, page, 'accept invitation');
    await page.getByLabel('Your name').fill('New Agent');
    await page.getByLabel('New password').fill('a long new passphrase');
    await page.getByLabel('Repeat the password').fill('a long new passphrase');
    await page.getByRole('button', { name: 'Accept and sign in' }).click();
    await page.getByRole('heading', { name: 'Calls', level: 1 }).waitFor();
    t.match(await page.getByText('new.agent@example.com').first().textContent(), /new.agent@example.com/, 'signed in as the new member');
    t.notOk(page.url().includes('token'), 'the token is gone from the address bar');
    t.notOk(urls.some((u) => u.includes('token=')), 'the token never went to the server in a URL');
    t.same(problems.filter((p) => !/401/.test(p)), [], 'no errors (but the signed-out 401)');

    // The same link again: used.
    const again = await openPage(browser, t);
    await again.page.goto(link);
    await again.page.getByLabel('Your name').fill('Someone');
    await again.page.getByLabel('New password').fill('another long passphrase');
    await again.page.getByLabel('Repeat the password').fill('another long passphrase');
    await again.page.getByRole('button', { name: 'Accept and sign in' }).click();
    await again.page.getByRole('alert').filter({ hasText: 'already used or has expired' }).waitFor();
    t.pass('a used invitation link says so');
  });

  await t.test('reset: forgot-password link → inbox → reset page → sign in with the new password', async (t) => {
    const { page } = await openPage(browser, t);
    await page.goto(`${env.url}/console/`);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
    await axe(t, page, 'forgot password');
    await page.getByLabel('Email').fill('owner.links@example.com');
    await page.getByRole('button', { name: 'Email me a reset link' }).click();
    await page.getByRole('status').filter({ hasText: 'a reset link is on its way' }).waitFor();
    const link = linkIn((await mail('owner.links@example.com', 'password_reset')).text);
    t.match(link, `${env.url}/console/reset-password#token=`);

    await page.goto(link);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await axe(t, page, 'reset password');
    await page.getByLabel('New password').fill('the brand new passphrase');
    await page.getByLabel('Repeat the password').fill('something else entirely');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('alert').filter({ hasText: 'The two passwords differ.' }).waitFor();
    await page.getByLabel('Repeat the password').fill('the brand new passphrase');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('link', { name: 'Sign in with the new password' }).click();
    await page.getByLabel('Email').fill('owner.links@example.com');
    await page.getByLabel('Password').fill('the brand new passphrase');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Calls', level: 1 }).waitFor();
    t.pass('signed in with the new password');

    const used = await openPage(browser, t);
    await used.page.goto(link);
    await used.page.getByLabel('New password').fill('yet another passphrase');
    await used.page.getByLabel('Repeat the password').fill('yet another passphrase');
    await used.page.getByRole('button', { name: 'Set the new password' }).click();
    await used.page.getByRole('alert').filter({ hasText: 'already used or has expired' }).waitFor();
    t.pass('a used reset link says so');
  });
}
