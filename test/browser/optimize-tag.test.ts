// The Optimize tag in real Chromium, against pages served on 127.0.0.1 with the snippet: ops before first paint,
// sticky variants, traffic split, each goal type once, a redirect variant, verified_at, shipping, and results and
// the conversions API agreeing with what the browser did.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { assignVariant } from '../../shared/optimize/bucketing.ts';
import { chromiumSkip, launchChromium, pageEventually } from '../helpers/browser.ts';
import { eventually, testEnv } from '../helpers/env.ts';

declare global { interface Window { openlineOptimize: { visitorId: string; variants: Record<string, string> }; __frames: [string | null, string][] } }

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  const env = await testEnv(t, { env: { OPTIMIZE_ROLLUP_MS: '200' } });
  const org = await env.bootstrap({ org: 'Tag Co' });
  const key = org.api_key;
  const workers = env.spawn('workers');
  await workers.ready(120_000);

  const prop = (await env.request('POST', '/v1/optimize/properties', { key, body: { domain: '127.0.0.1', name: 'Local site' } })).body.data;
  const snippet = (await env.request('GET', '/v1/optimize/snippet', { key })).body.data.script_tag as string;

  // Before the tag: every animation frame (each one precedes a paint) records the headline's text and whether the
  // page is visible, so a frame showing the control's text to the visitor would be caught.
  const FRAME_LOG = `<script>window.__frames=[];(function f(){var h=document.getElementById('headline');
window.__frames.push([h?h.textContent:null,getComputedStyle(document.documentElement).opacity]);if(window.__frames.length<600)requestAnimationFrame(f)})()</script>`;
  const page = (body: string, head = '') => `<!doctype html><html><head><meta charset="utf-8"><title>t</title>${FRAME_LOG}${snippet}${head}</head><body>${body}</body></html>`;
  const LANDING = `<h1 id="headline">Original headline</h1><p class="promo">Promo</p>
<a id="cta" href="/thanks">Buy</a> <a id="call" href="tel:+15550100" onclick="event.preventDefault()">Call</a>
<form id="signup" action="/signed-up" method="get"><input name="email" value="a@b.c"><button id="send">Send</button></form>`;
  const pages: Record<string, string> = {
    '/landing': page(LANDING),
    '/thanks': page('<h1>Thanks</h1>'),
    '/signed-up': page('<h1>Signed up</h1>'),
    '/split': page('<h1 id="headline">Split page</h1>'),
    '/old': page('<h1>Old offer</h1>'),
    '/new': page('<h1 id="new">New offer</h1><a id="cta" href="/thanks">Buy</a>'),
  };
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const html = pages[path];
    if (!html) { res.writeHead(path === '/favicon.ico' ? 204 : 404); res.end(); return; }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(html);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const site = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const create = async (body: Record<string, unknown>) => {
    const r = await env.request('POST', '/v1/optimize/tests', { key, body: { start: true, ...body } });
    if (r.status !== 201) throw new Error(JSON.stringify(r.body));
    return r.body.data;
  };
  const headline = await create({ name: 'Headline', page_url: `${site}/landing`, goal: { type: 'cta_click', selector: '#cta' },
    variants: [{ name: 'Control' }, { name: 'Bold', ops: [{ op: 'setText', selector: '#headline', value: 'Variant headline' },
      { op: 'setStyle', selector: '#headline', property: 'color', value: 'rgb(10, 127, 63)' }, { op: 'addClass', selector: '#headline', value: 'bold' }] }] });
  const tel = await create({ name: 'Tel', page_url: `${site}/landing`, goal: { type: 'tel_click' }, variants: [{ name: 'A' }, { name: 'B' }] });
  const form = await create({ name: 'Form', page_url: `${site}/landing`, goal: { type: 'form_submit', selector: '#signup' }, variants: [{ name: 'A' }, { name: 'B' }] });
  const promo = await create({ name: 'Promo', page_url: `${site}/landing`, goal: { type: 'selector_click', selector: '.promo' }, variants: [{ name: 'A' }, { name: 'B' }] });
  const visit = await create({ name: 'Visit', page_url: `${site}/landing`, goal: { type: 'url_visit', url_match_type: 'prefix', url_pattern: `${site}/thanks` }, variants: [{ name: 'A' }, { name: 'B' }] });
  const split = await create({ name: 'Split', page_url: `${site}/split`, traffic_split: 0.3, goal: { type: 'cta_click', selector: '#cta' },
    variants: [{ name: 'A' }, { name: 'B', ops: [{ op: 'setText', selector: '#headline', value: 'Split B' }] }] });
  const redirect = await create({ name: 'Redirect', page_url: `${site}/old`, goal: { type: 'cta_click', selector: '#cta' },
    variants: [{ name: 'Stay' }, { name: 'Go', redirect_url: `${site}/new` }] });

  /** A visitor id the server's hash puts in `variantIndex` of `test` (and in every split-1 test). */
  const visitorIn = (test: typeof headline, variantIndex: number, salt: string) => {
    for (let i = 0; ; i++) {
      const id = `${salt}${String(i).padStart(8, '0')}`;
      if (assignVariant(test.id, id, test.traffic_split, test.variants, test.hash_version)?.id === test.variants[variantIndex].id) return id;
    }
  };

  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const visitorPage = async (visitorId?: string): Promise<{ page: Page; problems: string[] }> => {
    const context = await browser.newContext();
    contexts.push(context);
    if (visitorId) await context.addCookies([{ name: 'rd_sid', value: visitorId, domain: '127.0.0.1', path: '/' }]);
    const p = await context.newPage();
    const problems: string[] = [];
    p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    p.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
    return { page: p, problems };
  };
  t.teardown(async () => { for (const c of contexts) await c.close().catch(() => undefined); });
  browser = await launchChromium(t);

  // Who saw what, as the browser tells it: test id -> variant id -> visitor ids.
  const seen = new Map<string, Map<string, Set<string>>>();
  const note = async (p: Page) => {
    const o = await p.evaluate(() => window.openlineOptimize);
    for (const [test, variant] of Object.entries(o.variants)) {
      const byVariant = seen.get(test) ?? new Map<string, Set<string>>();
      seen.set(test, byVariant);
      const set = byVariant.get(variant) ?? new Set<string>();
      byVariant.set(variant, set);
      set.add(o.visitorId);
    }
    return o;
  };

  await t.test('verified_at is set on the first tag load from the domain, not before', async (t) => {
    t.equal((await env.request('GET', '/v1/optimize/properties', { key })).body.data[0].verified_at, null);
    const { page: p, problems } = await visitorPage();
    await p.goto(`${site}/landing`);
    await note(p);
    const props = (await env.request('GET', '/v1/optimize/properties', { key })).body.data;
    t.ok(props[0].verified_at, 'verified');
    t.equal(props[0].id, prop.id);
    t.same(problems, []);
  });

  await t.test('ops before first paint, sticky across reloads', async (t) => {
    const id = visitorIn(headline, 1, 'bold');
    const { page: p, problems } = await visitorPage(id);
    await p.goto(`${site}/landing`);
    const o = await note(p);
    t.equal(o.visitorId, id, 'the visitor id is the rd_sid cookie');
    t.equal(o.variants[headline.id], headline.variants[1].id);
    t.equal(await p.textContent('#headline'), 'Variant headline');
    t.equal(await p.evaluate(() => getComputedStyle(document.getElementById('headline')!).color), 'rgb(10, 127, 63)');
    t.ok(await p.evaluate(() => document.getElementById('headline')!.classList.contains('bold')));
    const frames: [string | null, string][] = await pageEventually(p, () => (window.__frames.length > 5 ? window.__frames : null));
    const shownControl = frames.filter(([text, opacity]) => text === 'Original headline' && opacity !== '0');
    t.same(shownControl, [], 'no frame showed the control headline to the visitor');
    t.ok(frames.some(([text, opacity]) => text === 'Variant headline' && opacity === '1'), 'the variant was shown');
    await p.reload();
    t.equal((await note(p)).variants[headline.id], headline.variants[1].id, 'same variant after reload');
    t.equal(await p.textContent('#headline'), 'Variant headline');
    const cookie = (await p.context().cookies()).find((c) => c.name === 'rd_sid');
    t.equal(cookie?.value, id);
    t.same(problems, []);

    const fresh = await visitorPage();
    await fresh.page.goto(`${site}/landing`);
    const first = await note(fresh.page);
    t.match(first.visitorId, /^[A-Za-z0-9_-]{16}$/, 'a new visitor gets an rd_sid');
    await fresh.page.reload();
    t.equal((await note(fresh.page)).visitorId, first.visitorId, 'and keeps it');
    t.same((await note(fresh.page)).variants, first.variants, 'sticky variants');
  });

  await t.test('traffic split respected over many visitors', async (t) => {
    const N = 30;
    let enrolled = 0;
    for (let i = 0; i < N; i++) {
      const id = `split${String(i).padStart(8, '0')}`;
      const { page: p } = await visitorPage(id);
      // The tag sends its impression on a short timer; a context closed before then may take the beacon with it
      // (sendBeacon on pagehide is best effort), and the results below count what arrived. Wait for it to be answered.
      const collected = p.waitForResponse((r) => r.url().includes('/v1/optimize/collect'), { timeout: 30_000 }).catch(() => null);
      await p.goto(`${site}/split`);
      const o = await note(p);
      const want = assignVariant(split.id, id, split.traffic_split, split.variants, split.hash_version);
      if (want) t.ok(await collected, `visitor ${i}: the impression reached the collector`);
      t.equal(o.variants[split.id] ?? null, want?.id ?? null, `visitor ${i}: the browser's variant is the server's`);
      t.equal(await p.textContent('#headline'), want?.id === split.variants[1].id ? 'Split B' : 'Split page');
      if (want) enrolled++;
      await p.context().close();
    }
    t.ok(enrolled > 0 && enrolled < N, `some but not all of ${N} visitors enrolled at 0.3 (${enrolled})`);
  });

  await t.test('each goal type recorded once', async (t) => {
    const id = visitorIn(headline, 0, 'goals');
    const { page: p, problems } = await visitorPage(id);
    await p.goto(`${site}/landing`);
    await note(p);
    for (let i = 0; i < 2; i++) {
      await p.click('#call');
      await p.click('.promo');
      await p.click('#cta');
      await p.waitForURL(`${site}/thanks`);
      await p.goto(`${site}/landing`);
      await p.click('#send');
      await p.waitForURL(/signed-up/);
      await p.goto(`${site}/landing`);
    }
    for (const [test, goal] of [[headline, 'cta_click'], [tel, 'tel_click'], [form, 'form_submit'], [promo, 'selector_click'], [visit, 'url_visit']] as const) {
      const list = await eventually(async () => {
        const r = await env.request('GET', `/v1/optimize/conversions?test_id=${test.id}`, { key });
        return r.body.data.some((c: { visitor_id: string }) => c.visitor_id === id) && r.body.data;
      }, 60_000, 200);
      const mine = list.filter((c: { visitor_id: string }) => c.visitor_id === id);
      t.equal(mine.length, 1, `${goal}: once`);
      t.match(mine[0], { source: 'tag', goal_type: goal, variant_id: assignVariant(test.id, id, 1, test.variants, test.hash_version)!.id });
    }
    t.same(problems, []);
  });

  await t.test('a redirect variant', async (t) => {
    const id = visitorIn(redirect, 1, 'redir');
    const { page: p, problems } = await visitorPage(id);
    await p.goto(`${site}/old`);
    await p.waitForURL(`${site}/new`);
    t.equal(await p.textContent('#new'), 'New offer');
    // The redirect left /old before its variants could be read there: what the browser did is the redirect itself.
    const go = seen.get(redirect.id) ?? new Map<string, Set<string>>();
    seen.set(redirect.id, go.set(redirect.variants[1].id, (go.get(redirect.variants[1].id) ?? new Set()).add(id)));
    await p.click('#cta');
    await p.waitForURL(`${site}/thanks`);
    const conv = await eventually(async () => (await env.request('GET', `/v1/optimize/conversions?test_id=${redirect.id}`, { key })).body.data[0], 60_000, 200);
    t.match(conv, { visitor_id: id, variant_id: redirect.variants[1].id, goal_type: 'cta_click' }, 'the goal on the redirect target counts');
    const stay = visitorIn(redirect, 0, 'stay');
    const s = await visitorPage(stay);
    await s.page.goto(`${site}/old`);
    await note(s.page);
    t.equal(s.page.url(), `${site}/old`, 'the control stays');
    t.same([...problems, ...s.problems], []);
  });

  await t.test('results and the conversions API agree with the browser', async (t) => {
    for (const test of [headline, split, redirect]) {
      const want = seen.get(test.id)!;
      const results = await eventually(async () => {
        const r = (await env.request('GET', `/v1/optimize/tests/${test.id}/results`, { key })).body.data;
        const ok = r.variants.every((v: { variant_id: string; impressions: number }) => v.impressions === (want.get(v.variant_id)?.size ?? 0));
        return ok && r;
      }, 60_000, 300).catch(async () => {
        t.comment(`workers output:\n${workers.output.slice(-4000)}`);
        return (await env.request('GET', `/v1/optimize/tests/${test.id}/results`, { key })).body.data;
      });
      for (const v of results.variants) {
        t.equal(v.impressions, want.get(v.variant_id)?.size ?? 0, `${test.name}/${v.name}: impressions = visitors the browser showed it`);
      }
    }
    const r = (await env.request('GET', `/v1/optimize/tests/${headline.id}/results`, { key })).body.data;
    const convs = (await env.request('GET', `/v1/optimize/conversions?test_id=${headline.id}&limit=100`, { key })).body.data;
    t.equal(r.variants.reduce((s: number, v: { conversions: number }) => s + v.conversions, 0), convs.length, 'conversions in results = the list');

    // A visitor the tag assigned can be converted through the API; the variant comes from the assignment.
    const bold = [...seen.get(headline.id)!.get(headline.variants[1].id)!][0];
    const api = await env.request('POST', '/v1/optimize/conversions', { key, body: { test_id: headline.id, visitor_id: bold, value: 20, metadata: { order_id: 'o-1' } } });
    t.same(api.body.data, { recorded: true, test_id: headline.id, variant_id: headline.variants[1].id });
  });

  await t.test('a shipped variant is shown to everyone', async (t) => {
    const ship = await env.request('POST', `/v1/optimize/tests/${headline.id}/ship`, { key, body: { variant_id: headline.variants[1].id } });
    t.equal(ship.status, 200);
    await new Promise((r) => setTimeout(r, 1200)); // the gateway's property cache lives one second
    for (const id of [visitorIn(headline, 0, 'after'), visitorIn(headline, 1, 'after'), undefined]) {
      const { page: p, problems } = await visitorPage(id);
      await p.goto(`${site}/landing`);
      t.equal(await p.textContent('#headline'), 'Variant headline', `visitor ${id ?? 'new'} sees the shipped variant`);
      t.equal((await note(p)).variants[headline.id], undefined, 'not enrolled in a shipped test');
      t.same(problems, []);
    }
  });
}
