// The console's Caller trust page in Chromium against a real gateway and workers (sandbox vetting and brand review),
// found by label and role: an owner walks the guided registration form (four steps, a review), generates the Letter
// of Authorization and sees it load in the page (the embedded document answers 200 application/pdf), signs it there
// and watches the status move to Approved; sets up Branded Calling with a logo (previewed before it is sent and shown
// as stored), submits it and watches it go live on every network. A rejected registration is corrected and signed
// again from the page. A viewer (at 390 px) sees the states and the letter without a single write control, and the
// API refuses their write. axe-core: no serious or critical violation on each state.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import t, { type Test } from 'tap';
import type { Browser, Page, Response } from 'playwright-core';
import { createUser } from '../../shared/users/members.ts';
import { axeClean, signInConsole } from '../helpers/console.ts';
import { chromiumSkip, launchChromium, openPage, pageEventually } from '../helpers/browser.ts';
import { ROOT } from '../helpers/env.ts';
import { callEnv, callOrg } from '../calls/helpers.ts';
import { registrationBody, SIGN } from '../caller-trust/helpers.ts';

const PASSWORD = 'correct horse battery staple';
const SHOTS = join(ROOT, 'test-output', 'console');
const ENTERPRISE = '/v1/caller-trust/enterprise';

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  mkdirSync(SHOTS, { recursive: true });
  const { env } = await callEnv(t);
  const org = await callOrg(env, {}, { org: 'Trust Dental' });
  await createUser(env.db, { organizationId: org.organization_id, email: 'owner.trust@example.com', role: 'owner', password: PASSWORD });
  await createUser(env.db, { organizationId: org.organization_id, email: 'viewer.trust@example.com', role: 'viewer', password: PASSWORD });
  const browser: Browser = await launchChromium(t);
  const logoPath = join(SHOTS, 'trust-logo.png');
  await sharp({ create: { width: 400, height: 400, channels: 3, background: '#1d4ed8' } }).png().toFile(logoPath);

  const axe = axeClean;
  const shoot = async (page: Page, name: string) => {
    for (const [w, h] of [[1280, 900], [390, 844]] as const) {
      await page.setViewportSize({ width: w, height: h });
      await page.screenshot({ path: join(SHOTS, `${name}-${w}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  };
  const signIn = (page: Page, email: string) => signInConsole(page, env.url, email, PASSWORD);
  const openTrust = async (page: Page) => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Caller trust' }).click();
    await page.getByRole('heading', { name: 'Caller trust', level: 1 }).waitFor();
  };
  const isPdf = (version: string) => (r: Response) => r.url().includes(`/loa?version=${version}`) && r.request().method() === 'GET';
  /** The embedded letter's answer, and the frame it loaded in. */
  const checkPdf = async (t: Test, page: Page, answer: Promise<Response>, version: string) => {
    const r = await answer;
    t.equal(r.status(), 200, `the ${version} letter's answer is 200`);
    t.equal(r.headers()['content-type'], 'application/pdf', `the ${version} letter is application/pdf`);
    t.equal(r.request().frame().parentFrame(), page.mainFrame(), 'loaded by a frame embedded in the page');
    t.ok(await page.locator(`iframe[title="Letter of Authorization (${version})"]`).isVisible(), 'the preview frame is shown');
  };
  /** The problems a page saw, but the signed-out 401 and the 404 of a registration or display not made yet (every 404
   *  is also an "http 404: <url>" entry, checked by its URL, so Chromium's console line about it is left out). */
  const expected = (problems: string[]) => problems.filter((p) => !/401/.test(p)
    && !/^http 404: .*\/v1\/caller-trust\/(enterprise|brand)$/.test(p) && !/^console: Failed to load resource: .* 404 /.test(p));
  const status = (page: Page) => page.getByTestId('registration-status');

  await t.test('owner: guided registration, LOA preview, sign, approved; Branded Calling with a logo, live', async (t) => {
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await signIn(page, 'owner.trust@example.com');
    await openTrust(page);

    // --- the guided form ---
    const steps = page.getByRole('list', { name: 'Registration steps' });
    await steps.waitFor();
    t.match(await steps.locator('[aria-current="step"]').textContent(), /Business details/, 'step 1 is current');
    await page.getByText('No branded display yet.').waitFor();
    await axe(t, page, 'caller trust, empty');
    await shoot(page, 'caller-trust-empty');
    await page.getByLabel('Legal business name').fill('Acme Dental Group, LLC');
    await page.getByLabel('EIN').fill('74-1234567');
    await page.getByLabel('Business type').selectOption('llc');
    await page.getByLabel('Industry').fill('Dental care');
    await page.getByLabel('Website').fill('https://acmedental.example');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('heading', { name: 'Step 2 of 4: Address' }).waitFor();
    // The browser checks a step's fields before the next: an empty street address keeps the person on step 2.
    await page.getByRole('button', { name: 'Next' }).click();
    t.ok(await page.getByRole('heading', { name: 'Step 2 of 4: Address' }).isVisible(), 'a missing field keeps the step');
    await page.getByLabel('Street address').fill('500 Congress Ave');
    await page.getByLabel('Suite, floor or unit (optional)').fill('Suite 200');
    await page.getByLabel('City').fill('Austin');
    await page.getByLabel('State', { exact: true }).fill('TX');
    await page.getByLabel('ZIP code').fill('78701');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('heading', { name: 'Step 3 of 4: Contact' }).waitFor();
    await page.getByLabel('Contact name').fill('Dana Ruiz');
    await page.getByLabel('Contact title').fill('Chief Executive Officer');
    await page.getByLabel('Contact email').fill('dana@acmedental.example');
    await page.getByLabel('Contact phone').fill('+15125550100');
    await page.getByRole('checkbox', { name: org.from }).check();
    await axe(t, page, 'registration step 3');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('heading', { name: 'Step 4 of 4: Review' }).waitFor();
    const review = await page.getByRole('definition').allTextContents();
    t.ok(review.includes('Acme Dental Group, LLC') && review.includes('74-1234567') && review.includes(org.from), 'the review shows what was typed');
    await page.getByRole('button', { name: 'Back' }).click();
    await page.getByRole('heading', { name: 'Step 3 of 4: Contact' }).waitFor();
    t.equal(await page.getByLabel('Contact name').inputValue(), 'Dana Ruiz', 'going back keeps the values');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('button', { name: 'Create registration' }).click();
    await page.getByRole('status').filter({ hasText: 'Registration saved as a draft.' }).waitFor();
    t.equal(await status(page).textContent(), 'Draft');
    const created = (await env.request('GET', ENTERPRISE, { key: org.api_key })).body.data;
    t.match(created, { status: 'DRAFT', legal_name: 'Acme Dental Group, LLC', ein: '74-1234567', business_type: 'llc',
      registered_address: { line1: '500 Congress Ave', line2: 'Suite 200', city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' },
      authorized_contact: { name: 'Dana Ruiz', email: 'dana@acmedental.example', phone: '+15125550100' }, phone_numbers: [org.from] },
    'the API holds the registration as typed');

    // --- the letter, previewed in the page ---
    const unsigned = page.waitForResponse(isPdf('unsigned'));
    await page.getByRole('button', { name: 'Generate the letter' }).click();
    await checkPdf(t, page, unsigned, 'unsigned');
    await axe(t, page, 'caller trust, letter to sign');
    await shoot(page, 'caller-trust-loa');

    // --- signed in the page ---
    t.equal(await page.getByLabel('Signer name').inputValue(), 'Dana Ruiz', 'the signer defaults to the authorized contact');
    await page.getByLabel('Signature (type your full name)').fill('Dana Ruiz');
    await page.getByRole('button', { name: 'Sign and submit' }).click();
    await page.getByRole('alert').filter({ hasText: 'Tick the consent box' }).waitFor();
    await page.getByRole('checkbox', { name: /I am authorized to sign for Acme Dental Group, LLC/ }).check();
    const signed = page.waitForResponse(isPdf('signed'));
    await page.getByRole('button', { name: 'Sign and submit' }).click();
    await page.getByRole('status').filter({ hasText: 'Signed and submitted' }).waitFor();
    await checkPdf(t, page, signed, 'signed');
    // The sandbox vets in 50 ms here; the page reads the registration again while it is in vetting.
    await page.getByTestId('registration-status').filter({ hasText: 'Approved' }).waitFor({ timeout: 30_000 });
    await page.getByRole('status').filter({ hasText: 'Your business is registered.' }).waitFor();
    t.equal(await page.getByRole('button', { name: 'Sign and submit' }).count(), 0, 'nothing to sign once approved');
    const approved = (await env.request('GET', ENTERPRISE, { key: org.api_key })).body.data;
    t.match(approved, { status: 'APPROVED', loa: { signature_method: 'in_app' } }, 'the API agrees');

    // --- Branded Calling ---
    await page.getByLabel('Display name').fill('Acme Dental Group');
    await page.getByLabel('Call reason').fill('Appointment reminders and scheduling');
    await page.getByLabel('Logo', { exact: true }).setInputFiles(logoPath);
    const preview = page.getByRole('img', { name: 'Preview of the chosen logo' });
    await preview.waitFor();
    t.ok(await pageEventually(page, () => (document.querySelector('img[alt="Preview of the chosen logo"]') as HTMLImageElement | null)?.naturalWidth),
      'the chosen logo is previewed before it is sent');
    await page.getByText('400 × 400 px. Not saved yet.').waitFor();
    const logoAnswer = page.waitForResponse((r) => r.url().includes('/v1/caller-trust/brand/logo'));
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved as a draft.' }).waitFor();
    const logo = await logoAnswer;
    t.equal(logo.status(), 200, 'the stored logo loads');
    t.equal(logo.headers()['content-type'], 'image/png');
    await page.getByRole('img', { name: 'Logo of Acme Dental Group as stored' }).waitFor();
    t.ok(await pageEventually(page, () => (document.querySelector('img[alt="Logo of Acme Dental Group as stored"]') as HTMLImageElement | null)?.naturalWidth),
      'the stored logo is shown');
    t.equal(await page.getByTestId('brand-status').textContent(), 'Draft');
    await axe(t, page, 'branded calling, draft');
    await page.getByRole('button', { name: 'Submit for review' }).click();
    await page.getByRole('status').filter({ hasText: 'Submitted for review: the carriers' }).waitFor();
    t.equal(await page.getByLabel('Display name').count(), 0, 'no form while in review');
    await page.getByRole('status').filter({ hasText: 'Live on every network' }).waitFor({ timeout: 30_000 });
    const rollout = page.getByRole('table', { name: 'Rollout per network' });
    t.equal(await rollout.getByRole('row').filter({ hasText: 'live' }).count(), 3, 'AT&T, T-Mobile and Verizon live');
    const brand = (await env.request('GET', '/v1/caller-trust/brand', { key: org.api_key })).body.data;
    t.match(brand, { status: 'approved', display_name: 'Acme Dental Group', logo: { width: 400, height: 400 } }, 'the API agrees');
    await axe(t, page, 'caller trust, approved and live');
    await shoot(page, 'caller-trust');
    t.same(expected(problems), [], 'no console errors or failed requests (but the signed-out 401 and the 404s of nothing yet)');
  });

  await t.test('owner: a rejected registration is corrected and signed again', async (t) => {
    const other = await callOrg(env, {}, { org: 'Rejected Dental' });
    await createUser(env.db, { organizationId: other.organization_id, email: 'owner.rejected@example.com', role: 'owner', password: PASSWORD });
    const made = await env.request('POST', ENTERPRISE, { key: other.api_key, body: registrationBody([other.from], { ein: '74-1234569' }) });
    t.equal(made.status, 201, made.text);
    const signedR = await env.request('POST', `${ENTERPRISE}/${made.body.data.id}/sign-and-submit`, { key: other.api_key, body: SIGN });
    t.equal(signedR.status, 200, signedR.text);
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await signIn(page, 'owner.rejected@example.com');
    await openTrust(page);
    // The sandbox rejects an EIN ending in 9; the page reads the registration again while it is in vetting.
    await status(page).filter({ hasText: 'Rejected' }).waitFor({ timeout: 30_000 });
    const reasons = await page.getByRole('list', { name: 'Rejection reasons' }).getByRole('listitem').allTextContents();
    t.match(reasons.join('\n'), /ein_mismatch/, 'the reasons are shown');
    await axe(t, page, 'caller trust, rejected');
    await page.getByLabel('EIN').fill('74-1234568');
    await page.getByLabel('Signature (type your full name)').fill('Dana Ruiz');
    await page.getByRole('checkbox', { name: /I am authorized to sign/ }).check();
    await page.getByRole('button', { name: 'Sign again and resubmit' }).click();
    await page.getByRole('status').filter({ hasText: 'Signed and submitted' }).waitFor();
    await status(page).filter({ hasText: 'Approved' }).waitFor({ timeout: 30_000 });
    const now = (await env.request('GET', `${ENTERPRISE}/${made.body.data.id}`, { key: other.api_key })).body.data;
    t.match(now, { status: 'APPROVED', ein: '74-1234568', rejection_reasons: [] }, 'the corrected EIN was vetted');
    t.same(expected(problems), [], 'no console errors or failed requests (but the signed-out 401 and the 404s of nothing yet)');
  });

  await t.test('viewer at 390 px: the states and the letter, no write controls; the API refuses the write', async (t) => {
    const { page } = await openPage(browser, t);
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, 'viewer.trust@example.com');
    const signedPdf = page.waitForResponse(isPdf('signed'));
    await openTrust(page);
    await status(page).filter({ hasText: 'Approved' }).waitFor();
    await checkPdf(t, page, signedPdf, 'signed');
    await page.getByTestId('brand-status').filter({ hasText: 'Approved' }).waitFor();
    await page.getByRole('img', { name: 'Logo of Acme Dental Group as stored' }).waitFor();
    for (const name of ['Generate the letter', 'Sign and submit', 'Edit the business details', 'Save draft', 'Submit for review', 'Create registration', 'Next']) {
      t.equal(await page.getByRole('button', { name }).count(), 0, `no "${name}" button`);
    }
    t.equal(await page.getByLabel('Display name').count(), 0, 'no brand form');
    t.equal(await page.getByLabel('Signer name').count(), 0, 'no sign form');
    t.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'nothing wider than the 390 px screen');
    await axe(t, page, 'viewer caller trust');
    const written = await page.evaluate(async () => {
      const s = await (await fetch('/v1/session', { credentials: 'same-origin' })).json();
      const r = await fetch('/v1/caller-trust/brand', { method: 'PUT', credentials: 'same-origin',
        headers: { 'content-type': 'application/json', 'x-csrf-token': s.data.csrf_token }, body: JSON.stringify({ call_reason: 'Changed' }) });
      return r.status;
    });
    t.equal(written, 403, 'the API refuses the viewer\'s write');
  });

  await t.test('the console page allows same-origin frames only; the letter is not cached', async (t) => {
    const index = await fetch(`${env.url}/console/caller-trust`);
    t.match(index.headers.get('content-security-policy'), /frame-src 'self'/, 'the LOA preview may be framed from this origin');
    t.match(index.headers.get('content-security-policy'), /frame-ancestors 'none'/, 'the console itself is never framed');
    const id = (await env.request('GET', ENTERPRISE, { key: org.api_key })).body.data.id;
    const pdf = await fetch(`${env.url}${ENTERPRISE}/${id}/loa?version=signed`, { headers: { authorization: `Bearer ${org.api_key}` } });
    t.equal(pdf.status, 200);
    t.equal(pdf.headers.get('cache-control'), 'private, no-store');
    t.match(pdf.headers.get('content-disposition'), /^inline;/, 'shown in the page, not downloaded');
    t.equal((await pdf.arrayBuffer()).byteLength > 0, true);
  });
}
