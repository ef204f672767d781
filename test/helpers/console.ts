// What the console's browser tests share: an axe check of a page and the sign-in form.
import { AxeBuilder } from '@axe-core/playwright';
import type { Page } from 'playwright-core';
import type { Test } from 'tap';

/** axe-core finds no serious or critical violation on the page (WCAG 2.1 A/AA and best practice). */
export async function axeClean(t: Test, page: Page, name: string): Promise<void> {
  const r = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).analyze();
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  t.same(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`), [], `${name}: no serious or critical axe violation`);
}

/** Signs in on the console's sign-in page and waits for the Calls page. */
export async function signInConsole(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Calls', level: 1 }).waitFor();
}

/** Signs in and opens the Phone page, waiting until it listens for incoming calls to `number`. */
export async function openPhone(page: Page, baseUrl: string, email: string, password: string, number: string): Promise<void> {
  await signInConsole(page, baseUrl, email, password);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Phone' }).click();
  await page.getByRole('heading', { name: 'Phone', level: 1 }).waitFor();
  await page.getByLabel('Incoming calls').filter({ hasText: `Incoming calls to ${number} ring here.` }).waitFor({ timeout: 30_000 });
}
