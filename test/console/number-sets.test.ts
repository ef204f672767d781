// Number Sets on the console's Numbers page in Chromium against a real gateway, found by label and role: an owner
// creates a set with two numbers, sees the API's validation errors next to the fields they name (an empty name, a
// priority out of range), changes a member's options, adds a number, removes one, edits the set and deletes it after
// a confirmation; each step is checked through the API. A viewer sees the sets without a write control and the API
// refuses their write. axe-core: no serious or critical violation.
import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { createUser } from '../../shared/users/members.ts';
import { axeClean, signInConsole } from '../helpers/console.ts';
import { chromiumSkip, launchChromium, openPage } from '../helpers/browser.ts';
import { eventually, testEnv } from '../helpers/env.ts';

const PASSWORD = 'correct horse battery staple';

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  const env = await testEnv(t);
  const org = await env.bootstrap({ org: 'Sets Dental', numbers: 3 });
  const key = org.api_key;
  await createUser(env.db, { organizationId: org.organization_id, email: 'owner.sets@example.com', role: 'owner', password: PASSWORD });
  await createUser(env.db, { organizationId: org.organization_id, email: 'viewer.sets@example.com', role: 'viewer', password: PASSWORD });
  const numbers = (await env.request('GET', '/v1/phone-numbers?order=asc', { key })).body.data as { id: number; phone_number: string }[];
  const [a, b, c] = numbers;
  const browser: Browser = await launchChromium(t);
  const signIn = (page: Page, email: string) => signInConsole(page, env.url, email, PASSWORD);
  const nav = (page: Page, name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
  const sets = async () => (await env.request('GET', '/v1/number-health/sets', { key })).body.data as
    { id: string; name: string; use_case: string; members: { phone_id: number; role: string; state: string; outbound_enabled: boolean; priority: number }[] }[];
  const membersOf = (page: Page, set: string) => page.getByRole('table', { name: `Members of ${set}`, exact: true });

  await t.test('owner: create, validation next to the fields, change, add and remove members, edit, delete', async (t) => {
    const { page, problems } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await signIn(page, 'owner.sets@example.com');
    await nav(page, 'Numbers');
    await page.getByRole('heading', { name: 'Number Sets (0)' }).waitFor();
    await page.getByText('No Number Sets yet.').waitFor();

    // An empty name: the API's own message shows next to Name, and nothing is created.
    await page.getByRole('button', { name: 'New Number Set' }).click();
    const dialog = page.getByRole('dialog', { name: 'New Number Set' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Create Number Set' }).click();
    const expected = (await env.request('POST', '/v1/number-health/sets', { key, body: { name: '', use_case: '', identification_guidance: '', members: [] } })).body.error;
    t.equal(expected.code, 'validation_error');
    const name = dialog.getByLabel('Name');
    await eventually(async () => (await name.getAttribute('aria-invalid')) === 'true', 15_000);
    const describedBy = (await name.getAttribute('aria-describedby'))!;
    t.equal(await page.locator(`#${describedBy.split(' ')[0]}`).textContent(), expected.fields.name, 'the API\'s fields.name, tied to the input');
    t.equal((await sets()).length, 0, 'nothing created');
    await axeClean(t, page, 'new number set with an error');

    await name.fill('Appointment reminders');
    await dialog.getByLabel('Use case').fill('reminders');
    await dialog.getByLabel('Identification guidance').fill('Shows as Sets Dental.');
    await dialog.getByRole('checkbox', { name: a.phone_number }).check();
    await dialog.getByRole('checkbox', { name: b.phone_number }).check();
    await dialog.getByRole('button', { name: 'Create Number Set' }).click();
    await page.getByRole('status').filter({ hasText: 'Created the Number Set Appointment reminders.' }).waitFor();
    await page.getByRole('heading', { name: 'Number Sets (1)' }).waitFor();
    let [s] = await sets();
    t.match(s, { name: 'Appointment reminders', use_case: 'reminders' });
    t.same(s.members.map((m) => [m.phone_id, m.role, m.state, m.outbound_enabled, m.priority]).sort(),
      [[a.id, 'PRIMARY', 'ACTIVE', true, 100], [b.id, 'PRIMARY', 'ACTIVE', true, 100]].sort(), 'both numbers joined with the defaults');
    t.equal(await membersOf(page, 'Appointment reminders').getByRole('row').count(), 3, 'two members and the header row');
    // The numbers table shows the membership too (read again after the change).
    await eventually(async () => (await page.getByRole('table', { name: 'Phone numbers' }).getByRole('row').filter({ hasText: a.phone_number })
      .textContent())?.includes('Appointment reminders') ?? false, 15_000);

    // A member's options: a priority out of range is the API's error next to Priority; then a valid change.
    const form = page.getByRole('form', { name: 'Add or change a number in Appointment reminders' });
    await form.getByLabel('Number', { exact: true }).selectOption({ label: `${b.phone_number} (member)` });
    await form.getByLabel('Role').selectOption('ALTERNATE');
    await form.getByLabel('Priority').fill('20000');
    await form.getByRole('button', { name: 'Add or change number' }).click();
    const bad = (await env.request('PATCH', `/v1/number-health/sets/${s.id}`, { key, body: { members: [{ phone_id: b.id, priority: 20000 }] } })).body.error;
    t.equal(bad.code, 'validation_error');
    const priority = form.getByLabel('Priority');
    await eventually(async () => (await priority.getAttribute('aria-invalid')) === 'true', 15_000);
    t.equal(await page.locator(`#${(await priority.getAttribute('aria-describedby'))!}`).textContent(), bad.fields['members[0].priority'], 'fields["members[0].priority"] next to Priority');
    t.equal((await sets())[0].members.find((m) => m.phone_id === b.id)!.role, 'PRIMARY', 'nothing changed');
    await priority.fill('7');
    await form.getByLabel('State').selectOption('STANDBY');
    await form.getByRole('button', { name: 'Add or change number' }).click();
    await page.getByRole('status').filter({ hasText: `Changed ${b.phone_number} in Appointment reminders.` }).waitFor();
    [s] = await sets();
    t.match(s.members.find((m) => m.phone_id === b.id), { role: 'ALTERNATE', state: 'STANDBY', priority: 7, outbound_enabled: true });
    t.same(await membersOf(page, 'Appointment reminders').getByRole('row').filter({ has: page.getByRole('rowheader', { name: b.phone_number }) })
      .getByRole('cell').allTextContents().then((x) => x.slice(0, 4)), ['Alternate', 'Standby', 'Yes', '7'], 'the table shows the change');

    // Add the third number, not placing calls.
    await form.getByLabel('Number', { exact: true }).selectOption({ label: c.phone_number });
    await form.getByLabel('Places calls').uncheck();
    await form.getByRole('button', { name: 'Add or change number' }).click();
    await page.getByRole('status').filter({ hasText: `Added ${c.phone_number} to Appointment reminders.` }).waitFor();
    t.match((await sets())[0].members.find((m) => m.phone_id === c.id), { outbound_enabled: false, role: 'PRIMARY', state: 'ACTIVE' });

    // Remove the first.
    await page.getByRole('button', { name: `Remove ${a.phone_number} from Appointment reminders` }).click();
    await page.getByRole('status').filter({ hasText: `Removed ${a.phone_number} from Appointment reminders.` }).waitFor();
    t.same((await sets())[0].members.map((m) => m.phone_id).sort(), [b.id, c.id].sort(), 'the member is gone');
    t.equal(await membersOf(page, 'Appointment reminders').getByRole('row').count(), 3);

    // Edit the set's fields.
    await page.getByRole('button', { name: 'Edit Appointment reminders' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Appointment reminders' });
    await edit.getByLabel('Name').fill('Reminders');
    await edit.getByRole('button', { name: 'Save Number Set' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved Reminders.' }).waitFor();
    t.equal((await sets())[0].name, 'Reminders');
    await axeClean(t, page, 'numbers with a Number Set');

    // Delete after a confirmation; the numbers stay.
    await page.getByRole('button', { name: 'Delete Reminders' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete Reminders?' });
    await confirm.getByRole('button', { name: 'Delete Number Set' }).click();
    await page.getByRole('status').filter({ hasText: 'Deleted the Number Set Reminders.' }).waitFor();
    t.same(await sets(), [], 'the set is gone');
    t.equal((await env.request('GET', '/v1/phone-numbers', { key })).body.data.length, 3, 'the numbers stay');
    t.same(problems.filter((p) => !/401|400/.test(p)), [], 'no console errors or failed requests (but the sign-in 401 and the 400s asked for)');
  });

  await t.test('viewer: the sets without a write control; the API refuses the write', async (t) => {
    await env.request('POST', '/v1/number-health/sets', { key, body: { name: 'Read only', members: [{ phone_id: a.id }] } });
    const { page } = await openPage(browser, t);
    await page.setViewportSize({ width: 1280, height: 900 });
    await signIn(page, 'viewer.sets@example.com');
    await nav(page, 'Numbers');
    await membersOf(page, 'Read only').waitFor();
    t.equal(await page.getByRole('button', { name: 'New Number Set' }).count(), 0, 'no create');
    t.equal(await page.getByRole('button', { name: /^(Edit|Delete|Remove) / }).count(), 0, 'no edit, delete or remove');
    t.equal(await page.getByRole('form', { name: /^Add or change a number/ }).count(), 0, 'no member form');
    await axeClean(t, page, 'viewer number sets');
    const status = await page.evaluate(async () => {
      const s = await (await fetch('/v1/session', { credentials: 'same-origin' })).json();
      const list = await (await fetch('/v1/number-health/sets', { credentials: 'same-origin' })).json();
      const r = await fetch(`/v1/number-health/sets/${list.data[0].id}`, { method: 'DELETE', credentials: 'same-origin',
        headers: { 'x-csrf-token': s.data.csrf_token } });
      return r.status;
    });
    t.equal(status, 403, 'the API refuses the viewer\'s delete');
    t.equal((await sets()).length, 1, 'the set stays');
  });
}
