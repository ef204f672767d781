import t from 'tap';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ org: 'Optimize Co' });
const other = await env.bootstrap({ org: 'Other Co' });
const key = org.api_key;

const prop = (await env.request('POST', '/v1/optimize/properties', { key, body: { domain: 'shop.example.com', name: 'Shop' } })).body.data;

const baseTest = (over: Record<string, unknown> = {}) => ({
  name: 'Homepage CTA', page_url: 'https://shop.example.com/', goal: { type: 'cta_click', selector: '#cta' },
  variants: [{ name: 'Control' }, { name: 'Green', ops: [{ op: 'setText', selector: '#cta', value: 'Buy now' }] }],
  ...over,
});
const events = async (type: string) =>
  (await env.db.any('SELECT data FROM events WHERE organization_id = $1 AND event_type = $2 ORDER BY seq', [org.organization_id, type])).map((r) => r.data);

t.test('properties and snippet', async (t) => {
  t.match(prop, { domain: 'shop.example.com', name: 'Shop', verified_at: null, public_key: /^olpk_/ });
  const dup = await env.request('POST', '/v1/optimize/properties', { key, body: { domain: 'SHOP.example.com' } });
  t.equal(dup.status, 409);
  t.equal(dup.body.error.code, 'property_exists');
  t.equal(dup.body.error.fields.conflicts_with, prop.id);
  const bad = await env.request('POST', '/v1/optimize/properties', { key, body: { domain: 'https://x.com/path' } });
  t.equal(bad.status, 400);
  t.ok(bad.body.error.fields.domain);
  const list = await env.request('GET', '/v1/optimize/properties', { key });
  t.same(list.body.data.map((p: { id: string }) => p.id), [prop.id]);
  const sn = await env.request('GET', '/v1/optimize/snippet', { key });
  t.equal(sn.status, 200);
  t.equal(sn.body.data.property_id, prop.id);
  t.equal(sn.body.data.public_key, prop.public_key);
  t.match(sn.body.data.script_tag, new RegExp(`^<script src="http://[^"]+/v1/optimize/tag\\.js\\?k=${prop.public_key}"></script>$`));
  t.equal((await env.request('GET', '/v1/optimize/snippet', { key: other.api_key })).status, 404, 'no property yet');
  t.equal((await env.request('GET', `/v1/optimize/snippet?property_id=${prop.id}`, { key: other.api_key })).status, 404, 'another org');
  // Another organization may register the same domain (once per organization).
  t.equal((await env.request('POST', '/v1/optimize/properties', { key: other.api_key, body: { domain: 'shop.example.com' } })).status, 201);
});

t.test('create, read, list, patch, states and events', async (t) => {
  const c = await env.request('POST', '/v1/optimize/tests', { key, body: baseTest({ hypothesis: 'Shorter wins' }) });
  t.equal(c.status, 201, JSON.stringify(c.body));
  const test = c.body.data;
  t.match(test, { status: 'draft', property_id: prop.id, traffic_split: 1, hypothesis: 'Shorter wins', winner_variant_id: null,
    goal: { type: 'cta_click', selector: '#cta' } });
  t.same(test.variants.map((v: { is_control: boolean; weight: number }) => [v.is_control, v.weight]), [[true, 0.5], [false, 0.5]],
    'first variant is the control; weights default equal');
  t.same((await env.request('GET', `/v1/optimize/tests/${test.id}`, { key })).body.data, test);
  t.same((await events('optimize.test.created')).map((e) => e.test.id), [test.id]);
  t.same(Object.keys((await events('optimize.test.created'))[0].test).sort(), ['id', 'name', 'page_url', 'status', 'variants', 'winner_variant_id']);

  const pause = await env.request('PATCH', `/v1/optimize/tests/${test.id}`, { key, body: { status: 'paused' } });
  t.equal(pause.status, 409, 'a draft cannot pause');
  t.equal(pause.body.error.code, 'state_conflict');
  t.same(pause.body.error.fields, { entity: 'optimize_test', status: 'draft' });

  const start = await env.request('PATCH', `/v1/optimize/tests/${test.id}`, { key, body: { status: 'running', traffic_split: 0.5, name: 'CTA v2' } });
  t.equal(start.status, 200);
  t.match(start.body.data, { status: 'running', traffic_split: 0.5, name: 'CTA v2' });
  t.ok(start.body.data.started_at);
  t.equal((await env.request('PATCH', `/v1/optimize/tests/${test.id}`, { key, body: { status: 'paused' } })).body.data.status, 'paused');
  t.equal((await env.request('PATCH', `/v1/optimize/tests/${test.id}`, { key, body: { status: 'running' } })).body.data.status, 'running');
  t.equal((await events('optimize.test.started')).filter((e) => e.test.id === test.id).length, 2, 'start and resume each fire started');

  const bad = await env.request('PATCH', `/v1/optimize/tests/${test.id}`, { key, body: { traffic_split: 0.01 } });
  t.equal(bad.status, 400);
  t.ok(bad.body.error.fields.traffic_split);
  t.equal((await env.request('PATCH', `/v1/optimize/tests/${test.id}`, { key, body: { page_url: 'https://evil.example.org/' } })).status, 400);

  const l = await env.request('GET', '/v1/optimize/tests?status=running&limit=5', { key });
  t.equal(l.status, 200);
  t.same(l.body.data.map((x: { id: string }) => x.id), [test.id]);
  t.same(l.body.meta, { page_size: 5, offset: 0, total_results: 1 });
  t.same((await env.request('GET', '/v1/optimize/tests?status=draft', { key })).body.data, []);

  // Ship from running, then only archive is allowed; the shipped variant stays after archive.
  const green = test.variants[1].id;
  t.equal((await env.request('POST', `/v1/optimize/tests/${test.id}/ship`, { key, body: { variant_id: prop.id } })).status, 400, 'not a variant');
  const ship = await env.request('POST', `/v1/optimize/tests/${test.id}/ship`, { key, body: { variant_id: green } });
  t.equal(ship.status, 200);
  t.match(ship.body.data, { status: 'shipped', shipped_variant_id: green });
  t.same((await events('optimize.test.shipped')).map((e) => [e.test.id, e.test.status]), [[test.id, 'shipped']]);
  const again = await env.request('PATCH', `/v1/optimize/tests/${test.id}`, { key, body: { status: 'running' } });
  t.equal(again.status, 409);
  t.equal(again.body.error.fields.status, 'shipped');
  const del = await env.request('DELETE', `/v1/optimize/tests/${test.id}`, { key });
  t.equal(del.status, 200);
  t.match(del.body.data, { status: 'archived', shipped_variant_id: green });
  const del2 = await env.request('DELETE', `/v1/optimize/tests/${test.id}`, { key });
  t.equal(del2.status, 409);
  t.equal(del2.body.error.fields.status, 'archived');
  t.equal((await env.request('GET', `/v1/optimize/tests/${test.id}/results`, { key })).status, 200, 'results kept');
});

t.test('create with start fires created then started', async (t) => {
  const c = await env.request('POST', '/v1/optimize/tests', { key, body: baseTest({ start: true, traffic_split: 0.25,
    variants: [{ name: 'A', weight: 1 }, { name: 'B', weight: 3, is_control: true }] }) });
  t.equal(c.status, 201);
  t.equal(c.body.data.status, 'running');
  t.same(c.body.data.variants.map((v: { is_control: boolean; weight: number }) => [v.is_control, v.weight]), [[false, 0.25], [true, 0.75]]);
  const rows = await env.db.any(`SELECT event_type FROM events WHERE data->'test'->>'id' = $1 ORDER BY seq`, [c.body.data.id]);
  t.same(rows.map((r) => r.event_type), ['optimize.test.created', 'optimize.test.started']);
});

t.test('validation of tests', async (t) => {
  const before = (await env.db.one('SELECT count(*)::int AS n FROM optimize_tests')).n;
  const cases: [string, Record<string, unknown>, string][] = [
    ['one variant', baseTest({ variants: [{ name: 'A' }] }), 'variants'],
    ['two controls', baseTest({ variants: [{ name: 'A', is_control: true }, { name: 'B', is_control: true }] }), 'variants'],
    ['some weights', baseTest({ variants: [{ name: 'A', weight: 1 }, { name: 'B' }] }), 'variants'],
    ['duplicate names', baseTest({ variants: [{ name: 'A' }, { name: 'A' }] }), 'variants[1].name'],
    ['ops on control', baseTest({ variants: [{ name: 'A', ops: [{ op: 'hide', selector: '#x' }] }, { name: 'B' }] }), 'variants[0]'],
    ['split too low', baseTest({ traffic_split: 0.01 }), 'traffic_split'],
    ['split too high', baseTest({ traffic_split: 1.5 }), 'traffic_split'],
    ['page off domain', baseTest({ page_url: 'https://other.example.net/' }), 'page_url'],
    ['page not a URL', baseTest({ page_url: 'not a url' }), 'page_url'],
    ['cta without selector', baseTest({ goal: { type: 'cta_click' } }), 'goal.selector'],
    ['url_visit without pattern', baseTest({ goal: { type: 'url_visit', url_match_type: 'exact' } }), 'goal.url_pattern'],
    ['invalid regex', baseTest({ goal: { type: 'url_visit', url_match_type: 'regex', url_pattern: '(unclosed' } }), 'goal.url_pattern'],
    ['catastrophic regex', baseTest({ goal: { type: 'url_visit', url_match_type: 'regex', url_pattern: '^(a+)+$' } }), 'goal.url_pattern'],
    ['long regex', baseTest({ goal: { type: 'url_visit', url_match_type: 'regex', url_pattern: 'a'.repeat(201) } }), 'goal.url_pattern'],
    ['backreference regex', baseTest({ goal: { type: 'url_visit', url_match_type: 'regex', url_pattern: '(a)\\1' } }), 'goal.url_pattern'],
    ['unknown goal', baseTest({ goal: { type: 'scroll' } }), 'goal.type'],
    ['redirect to javascript', baseTest({ variants: [{ name: 'A' }, { name: 'B', redirect_url: 'javascript:alert(1)' }] }), 'variants[1].redirect_url'],
    ['relative redirect', baseTest({ variants: [{ name: 'A' }, { name: 'B', redirect_url: '/other' }] }), 'variants[1].redirect_url'],
    ['redirect to the same page', baseTest({ variants: [{ name: 'A' }, { name: 'B', redirect_url: 'https://shop.example.com/?v=2' }] }), 'variants[1].redirect_url'],
    ['unknown field', baseTest({ colour: 'red' }), 'colour'],
  ];
  for (const [what, body, field] of cases) {
    const r = await env.request('POST', '/v1/optimize/tests', { key, body });
    t.equal(r.status, 400, what);
    t.equal(r.body.error?.code, 'validation_error', what);
    t.ok(r.body.error?.fields?.[field], `${what}: fields names ${field} (${JSON.stringify(r.body.error?.fields)})`);
  }
  const ok = await env.request('POST', '/v1/optimize/tests', { key, body: baseTest({ goal: { type: 'url_visit', url_match_type: 'regex', url_pattern: '^https://shop\\.example\\.com/thanks(\\?.*)?$' } }) });
  t.equal(ok.status, 201, 'a bounded regex is fine');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM optimize_tests')).n, before + 1, 'nothing half-written');
});

t.test('every hostile op is refused, naming the op and why', async (t) => {
  const hostile: [string, Record<string, unknown>, string][] = [
    ['on* attribute', { op: 'setAttribute', selector: 'img', name: 'onerror', value: 'alert(1)' }, 'name'],
    ['ON* attribute in capitals', { op: 'setAttribute', selector: 'img', name: 'OnLoad', value: 'alert(1)' }, 'name'],
    ['on* attribute with entities', { op: 'setAttribute', selector: 'img', name: '&#111;nclick', value: 'x' }, 'name'],
    ['srcdoc', { op: 'setAttribute', selector: '#frame', name: 'srcdoc', value: '<b>x</b>' }, 'name'],
    ['SRCDOC', { op: 'setAttribute', selector: '#frame', name: 'SrcDoc', value: 'x' }, 'name'],
    ['style attribute', { op: 'setAttribute', selector: 'div', name: 'style', value: 'color:red' }, 'name'],
    ['formaction', { op: 'setAttribute', selector: 'button', name: 'formaction', value: 'https://x' }, 'name'],
    ['javascript: href', { op: 'replaceHref', selector: 'a', value: 'javascript:alert(1)' }, 'value'],
    ['JavaScript: mixed case', { op: 'replaceHref', selector: 'a', value: 'JaVaScRiPt:alert(1)' }, 'value'],
    ['javascript: with whitespace', { op: 'replaceHref', selector: 'a', value: ' java\tscript\n:alert(1)' }, 'value'],
    ['javascript: with control chars', { op: 'replaceHref', selector: 'a', value: '\u0001javascript:alert(1)' }, 'value'],
    ['javascript: with numeric entity', { op: 'replaceHref', selector: 'a', value: 'javascript&#58;alert(1)' }, 'value'],
    ['javascript: with hex entity', { op: 'replaceHref', selector: 'a', value: '&#x6A;avascript:alert(1)' }, 'value'],
    ['javascript: with named entity', { op: 'replaceHref', selector: 'a', value: 'javascript&colon;alert(1)' }, 'value'],
    ['javascript: with double-encoded entity', { op: 'replaceHref', selector: 'a', value: 'javascript&amp;colon;alert(1)' }, 'value'],
    ['javascript: with a tab entity', { op: 'replaceHref', selector: 'a', value: 'java&Tab;script:alert(1)' }, 'value'],
    ['data: URL', { op: 'replaceHref', selector: 'a', value: 'data:text/html,<script>alert(1)</script>' }, 'value'],
    ['DATA: URL', { op: 'replaceHref', selector: 'a', value: 'DaTa:text/html;base64,PHNjcmlwdD4=' }, 'value'],
    ['vbscript: URL', { op: 'replaceHref', selector: 'a', value: 'vbscript:msgbox(1)' }, 'value'],
    ['VBScript: with spaces', { op: 'replaceHref', selector: 'a', value: '  VBScript:msgbox(1)' }, 'value'],
    ['javascript: src via setAttribute', { op: 'setAttribute', selector: 'img', name: 'src', value: 'javascript:alert(1)' }, 'value'],
    ['data: href via setAttribute', { op: 'setAttribute', selector: 'a', name: 'HREF', value: 'data:text/html,x' }, 'value'],
    ['style url(', { op: 'setStyle', selector: 'div', property: 'background', value: 'url(https://evil/x.png)' }, 'value'],
    ['style URL( in capitals', { op: 'setStyle', selector: 'div', property: 'background', value: 'URL(x)' }, 'value'],
    ['style url( with CSS escape', { op: 'setStyle', selector: 'div', property: 'background', value: '\\75rl(x)' }, 'value'],
    ['style url( with comment', { op: 'setStyle', selector: 'div', property: 'background', value: 'u/**/rl(x)' }, 'value'],
    ['style url( with spaces', { op: 'setStyle', selector: 'div', property: 'background', value: 'u r l (x)' }, 'value'],
    ['style expression', { op: 'setStyle', selector: 'div', property: 'width', value: 'expression(alert(1))' }, 'value'],
    ['style EXPRESSION escaped', { op: 'setStyle', selector: 'div', property: 'width', value: 'exp\\72 ession(alert(1))' }, 'value'],
    ['style @import', { op: 'setStyle', selector: 'div', property: 'color', value: '@import "x.css"' }, 'value'],
    ['style @IMPORT entity', { op: 'setStyle', selector: 'div', property: 'color', value: '&#64;IMPORT "x"' }, 'value'],
    ['style breaking out', { op: 'setStyle', selector: 'div', property: 'color', value: 'red;} body{background:red' }, 'value'],
    ['style behavior property', { op: 'setStyle', selector: 'div', property: 'behavior', value: 'x.htc' }, 'property'],
    ['style -moz-binding', { op: 'setStyle', selector: 'div', property: '-moz-binding', value: 'x' }, 'property'],
    ['setText on a script', { op: 'setText', selector: 'script', value: 'alert(1)' }, 'selector'],
    ['setText on a SCRIPT child', { op: 'setText', selector: 'head > SCRIPT', value: 'alert(1)' }, 'selector'],
    ['setText on an escaped script', { op: 'setText', selector: 'scr\\69pt', value: 'alert(1)' }, 'selector'],
    ['setText on a style', { op: 'setText', selector: 'style', value: 'body{background:url(x)}' }, 'selector'],
    ['setAttribute on an iframe', { op: 'setAttribute', selector: 'iframe#x', name: 'src', value: 'https://evil/' }, 'selector'],
    ['base element', { op: 'replaceHref', selector: 'base', value: 'https://evil/' }, 'selector'],
    ['svg element', { op: 'setAttribute', selector: 'div svg a', name: 'href', value: 'https://x/' }, 'selector'],
    ['universal selector', { op: 'setText', selector: 'head > *', value: 'alert(1)' }, 'selector'],
    ['selector injecting a style block', { op: 'hide', selector: 'div{} body' }, 'selector'],
    ['selector with markup', { op: 'hide', selector: '<img src=x onerror=alert(1)>' }, 'selector'],
    ['unknown op', { op: 'setHtml', selector: 'div', value: '<b>x</b>' }, 'op'],
    ['innerHTML field', { op: 'setText', selector: 'div', value: 'x', html: '<script>' }, 'html'],
  ];
  const before = (await env.db.one('SELECT count(*)::int AS n FROM optimize_tests')).n;
  for (const [what, op, field] of hostile) {
    const r = await env.request('POST', '/v1/optimize/tests', { key, body: baseTest({ variants: [{ name: 'A' }, { name: 'B', ops: [op] }] }) });
    t.equal(r.status, 400, `${what}: refused`);
    const fields = r.body.error?.fields ?? {};
    const named = Object.keys(fields).find((f) => f === `variants[1].ops[0].${field}` || (field === 'op' && f === 'variants[1].ops[0].op')
      || f === `variants.1.ops.0.${field}` || f.endsWith(`ops[0].${field}`) || f.includes(`ops/0/${field}`) || f.includes(`ops.0.${field}`));
    t.ok(named, `${what}: fields names the op's ${field} (${JSON.stringify(fields)})`);
  }
  // A hostile op is refused on a redirect variant too, and text that looks like markup is only text.
  const text = await env.request('POST', '/v1/optimize/tests', { key, body: baseTest({ variants: [{ name: 'A' }, { name: 'B', ops: [
    { op: 'setText', selector: '#cta', value: '<img src=x onerror=alert(1)>' },
    { op: 'replaceHref', selector: 'a.buy', value: 'https://shop.example.com/checkout' },
    { op: 'replaceHref', selector: 'a.call', value: 'tel:+15550100' },
    { op: 'setAttribute', selector: 'img.hero', name: 'alt', value: 'A hero' },
    { op: 'setStyle', selector: '.banner', property: 'background-color', value: '#0a7f3f' },
    { op: 'addClass', selector: '.banner', value: 'promo' }, { op: 'removeClass', selector: '.banner', value: 'old' },
    { op: 'hide', selector: '.popup' }, { op: 'setText', selector: '.description', value: 'Scripts are great' },
  ] }] }) });
  t.equal(text.status, 201, `safe ops are accepted (${JSON.stringify(text.body.error?.fields)})`);
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM optimize_tests')).n, before + 1, 'no hostile test was written');
});

t.test('completion rule: a winner completes the test with winner_variant_id, no difference without', async (t) => {
  const mk = async () => (await env.request('POST', '/v1/optimize/tests', { key, body: baseTest({ start: true }) })).body.data;
  const seed = (testId: string, rows: [string, number, number][]) => env.db.none(
    `INSERT INTO optimize_daily_counts (test_id, variant_id, day, impressions, conversions, revenue_cents)
     SELECT $1, v, d::date, i, c, 0 FROM unnest($2::uuid[], $3::text[], $4::bigint[], $5::bigint[]) AS x(v, d, i, c)`,
    [testId, rows.map((r) => r[0]), rows.map(() => '2026-11-20'), rows.map((r) => r[1]), rows.map((r) => r[2])]);

  const win = await mk();
  await seed(win.id, [[win.variants[0].id, 5000, 250], [win.variants[1].id, 5000, 400]]);
  const r = await env.request('GET', `/v1/optimize/tests/${win.id}/results`, { key });
  t.equal(r.status, 200);
  t.equal(r.body.data.decision.reason, 'winner');
  t.equal(r.body.data.decision.winner_variant_id, win.variants[1].id);
  t.equal(r.body.data.variants[1].impressions, 5000);
  t.equal(r.body.data.variants[1].conversions, 400);
  t.ok(r.body.data.variants[1].p_value < 0.001);
  t.same(r.body.data.daily.length, 2);
  const after = (await env.request('GET', `/v1/optimize/tests/${win.id}`, { key })).body.data;
  t.match(after, { status: 'completed', winner_variant_id: win.variants[1].id });
  const w = (await events('optimize.test.winner')).filter((e) => e.test.id === win.id);
  t.equal(w.length, 1);
  t.equal(w[0].test.winner_variant_id, win.variants[1].id);
  await env.request('GET', `/v1/optimize/tests/${win.id}/results`, { key });
  t.equal((await events('optimize.test.winner')).filter((e) => e.test.id === win.id).length, 1, 'completes once');

  const same = await mk();
  await seed(same.id, [[same.variants[0].id, 200000, 10000], [same.variants[1].id, 200000, 10010]]);
  const s = await env.request('GET', `/v1/optimize/tests/${same.id}/results`, { key });
  t.equal(s.body.data.decision.reason, 'no_difference', JSON.stringify(s.body.data.decision));
  t.equal(s.body.data.decision.winner_variant_id, null);
  t.match((await env.request('GET', `/v1/optimize/tests/${same.id}`, { key })).body.data, { status: 'completed', winner_variant_id: null });
  t.equal((await events('optimize.test.completed')).filter((e) => e.test.id === same.id).length, 1);

  const few = await mk();
  await seed(few.id, [[few.variants[0].id, 10, 1], [few.variants[1].id, 10, 5]]);
  t.equal((await env.request('GET', `/v1/optimize/tests/${few.id}/results`, { key })).body.data.decision.reason, 'collecting');
  t.equal((await env.request('GET', `/v1/optimize/tests/${few.id}`, { key })).body.data.status, 'running');
  // A completed test can be shipped; a paused one is not completed by the rule.
  t.equal((await env.request('POST', `/v1/optimize/tests/${win.id}/ship`, { key, body: { variant_id: win.variants[1].id } })).status, 200);
});

t.test('conversions: recorded assignment, idempotent order_id, events, list', async (t) => {
  const test = (await env.request('POST', '/v1/optimize/tests', { key, body: baseTest({ start: true }) })).body.data;
  const visitor = 'visitor_ABCDEFGH1234';
  const none = await env.request('POST', '/v1/optimize/conversions', { key, body: { test_id: test.id, visitor_id: visitor, value: 10 } });
  t.equal(none.status, 422);
  t.equal(none.body.error.code, 'visitor_not_assigned');
  const variant = test.variants[1].id;
  await env.db.none('INSERT INTO optimize_assignments (test_id, visitor_id, variant_id, assigned_at) VALUES ($1, $2, $3, now())', [test.id, visitor, variant]);
  const c1 = await env.request('POST', '/v1/optimize/conversions', { key, body: { test_id: test.id, visitor_id: visitor, value: 49.9, metadata: { order_id: 'A-1' } } });
  t.equal(c1.status, 200);
  t.same(c1.body.data, { recorded: true, test_id: test.id, variant_id: variant });
  const c2 = await env.request('POST', '/v1/optimize/conversions', { key, body: { test_id: test.id, visitor_id: visitor, value: 49.9, metadata: { order_id: 'A-1' } } });
  t.same(c2.body.data, { recorded: false, test_id: test.id, variant_id: variant }, 'same order_id: not recorded again');
  const c3 = await env.request('POST', '/v1/optimize/conversions', { key, body: { test_id: test.id, visitor_id: visitor, value: 5, metadata: { order_id: 'A-2' } } });
  t.equal(c3.body.data.recorded, true);
  const r = (await env.request('GET', `/v1/optimize/tests/${test.id}/results`, { key })).body.data;
  const v = r.variants.find((x: { variant_id: string }) => x.variant_id === variant);
  t.equal(v.conversions, 1, 'a visitor converts once');
  t.equal(v.revenue_cents, 5490, 'every value adds to revenue');
  const ev = (await events('optimize.conversion.created')).filter((e) => e.conversion.test_id === test.id);
  t.equal(ev.length, 2);
  t.match(ev[0].conversion, { test_id: test.id, variant_id: variant, visitor_id: visitor, value: 49.9, source: 'api', metadata: { order_id: 'A-1' } });
  const l = await env.request('GET', `/v1/optimize/conversions?test_id=${test.id}&limit=1`, { key });
  t.equal(l.status, 200);
  t.equal(l.body.data.length, 1);
  t.ok(l.body.meta.cursor);
  t.same(l.body.data[0], ev[1].conversion, 'the event body carries a list item');
  const l2 = await env.request('GET', `/v1/optimize/conversions?test_id=${test.id}&limit=1&cursor=${encodeURIComponent(l.body.meta.cursor)}`, { key });
  t.same(l2.body.data, [ev[0].conversion]);
  t.equal((await env.request('GET', '/v1/optimize/conversions', { key })).status, 400, 'test_id is required');
  const bad = await env.request('POST', '/v1/optimize/conversions', { key, body: { test_id: test.id, visitor_id: 'x y', value: -1 } });
  t.equal(bad.status, 400);
  t.ok(bad.body.error.fields.value);
});

t.test('tenant isolation and scopes', async (t) => {
  const test = (await env.request('POST', '/v1/optimize/tests', { key, body: baseTest() })).body.data;
  const ok = other.api_key;
  t.equal((await env.request('GET', `/v1/optimize/tests/${test.id}`, { key: ok })).status, 404);
  t.equal((await env.request('PATCH', `/v1/optimize/tests/${test.id}`, { key: ok, body: { name: 'x' } })).status, 404);
  t.equal((await env.request('DELETE', `/v1/optimize/tests/${test.id}`, { key: ok })).status, 404);
  t.equal((await env.request('POST', `/v1/optimize/tests/${test.id}/ship`, { key: ok, body: { variant_id: test.variants[0].id } })).status, 404);
  t.equal((await env.request('GET', `/v1/optimize/tests/${test.id}/results`, { key: ok })).status, 404);
  t.equal((await env.request('GET', `/v1/optimize/conversions?test_id=${test.id}`, { key: ok })).status, 404);
  t.equal((await env.request('POST', '/v1/optimize/conversions', { key: ok, body: { test_id: test.id, visitor_id: 'abcdefgh12' } })).status, 404);
  t.equal((await env.request('POST', '/v1/optimize/tests', { key: ok, body: { ...baseTest(), property_id: prop.id } })).status, 400, 'another org\'s property');
  t.notOk((await env.request('GET', '/v1/optimize/tests', { key: ok })).body.data.some((x: { id: string }) => x.id === test.id));
  t.equal((await env.request('GET', '/v1/optimize/tests/not-a-uuid', { key })).status, 404);

  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['optimize:read'] });
  const none = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['calls:read'] });
  const writes: [string, string, unknown][] = [
    ['POST', '/v1/optimize/properties', { domain: 'b.example.com' }],
    ['POST', '/v1/optimize/tests', baseTest()],
    ['PATCH', `/v1/optimize/tests/${test.id}`, { name: 'x' }],
    ['DELETE', `/v1/optimize/tests/${test.id}`, undefined],
    ['POST', `/v1/optimize/tests/${test.id}/ship`, { variant_id: test.variants[0].id }],
    ['POST', '/v1/optimize/conversions', { test_id: test.id, visitor_id: 'abcdefgh12' }],
  ];
  for (const [m, p, body] of writes) {
    const r = await env.request(m, p, { key: ro.apiKey, body });
    t.equal(r.status, 403, `${m} ${p} needs optimize:write`);
    t.equal(r.body.error.code, 'scope_missing');
  }
  const reads = ['/v1/optimize/properties', '/v1/optimize/snippet', '/v1/optimize/tests', `/v1/optimize/tests/${test.id}`,
    `/v1/optimize/tests/${test.id}/results`, `/v1/optimize/conversions?test_id=${test.id}`];
  for (const p of reads) {
    t.equal((await env.request('GET', p, { key: ro.apiKey })).status, 200, `GET ${p} with optimize:read`);
    const r = await env.request('GET', p, { key: none.apiKey });
    t.equal(r.status, 403, `GET ${p} needs optimize:read`);
    t.equal(r.body.error.code, 'scope_missing');
  }
});

t.test('idempotent create and ship with Idempotency-Key', async (t) => {
  const headers = { 'idempotency-key': `opt-create-${Date.now()}` };
  const body = baseTest({ name: 'Keyed', start: true });
  const a = await env.request('POST', '/v1/optimize/tests', { key, body, headers });
  const b = await env.request('POST', '/v1/optimize/tests', { key, body, headers });
  t.equal(a.status, 201);
  t.equal(b.status, 201);
  t.equal(b.headers['idempotency-replay'], 'true');
  t.equal(b.body.data.id, a.body.data.id, 'one test');
  t.equal((await env.db.one(`SELECT count(*)::int AS n FROM events WHERE event_type = 'optimize.test.created' AND data->'test'->>'id' = $1`, [a.body.data.id])).n, 1, 'one event');
  const shipHeaders = { 'idempotency-key': `opt-ship-${Date.now()}` };
  const s1 = await env.request('POST', `/v1/optimize/tests/${a.body.data.id}/ship`, { key, body: { variant_id: a.body.data.variants[1].id }, headers: shipHeaders });
  const s2 = await env.request('POST', `/v1/optimize/tests/${a.body.data.id}/ship`, { key, body: { variant_id: a.body.data.variants[1].id }, headers: shipHeaders });
  t.equal(s1.status, 200);
  t.same(s2.body, s1.body, 'the replay, not a 409');
});
