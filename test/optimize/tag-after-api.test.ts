// A visitor's tag goal that reaches the rollup after an API conversion of the same visitor was counted is kept in
// the conversions list as not counted (the visitor already converted): it used to vanish (ON CONFLICT DO NOTHING).
import t from 'tap';
import { eventually, httpCall, testEnv } from '../helpers/env.ts';

const env = await testEnv(t, { env: { OPTIMIZE_ROLLUP_MS: '200', OPTIMIZE_COLLECT_LIMIT: '1000000' } });
const org = await env.bootstrap({ org: 'Tag After API' });
const key = org.api_key;
const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';
const prop = (await env.request('POST', '/v1/optimize/properties', { key, body: { domain: 'shop.example.com' } })).body.data;
const test = (await env.request('POST', '/v1/optimize/tests', { key, body: {
  name: 'Buy button', page_url: 'https://shop.example.com/', goal: { type: 'cta_click', selector: '#buy' }, start: true,
  variants: [{ name: 'Control' }, { name: 'B', ops: [{ op: 'setText', selector: 'h1', value: 'Hi' }] }],
} })).body.data;
const collect = (body: unknown) => httpCall(env.url, 'POST', '/v1/optimize/collect', {
  rawBody: JSON.stringify(body), headers: { 'content-type': 'text/plain;charset=UTF-8', 'user-agent': UA, origin: 'https://shop.example.com' },
});
env.spawn('workers');

t.test('API conversion first, tag goal after: both listed, one counted', async (t) => {
  const visitor = 'visitor-api-then-tag';
  t.equal((await collect({ k: prop.public_key, v: visitor, e: [{ t: 'i', x: test.id }] })).body.accepted, 1, 'impression');
  const api = await env.request('POST', '/v1/optimize/conversions', { key, body: { test_id: test.id, visitor_id: visitor, value: 20 } });
  t.equal(api.status, 200);
  t.equal(api.body.data.recorded, true);
  t.equal((await collect({ k: prop.public_key, v: visitor, e: [{ t: 'g', x: test.id }] })).body.accepted, 1, 'the tag goal is accepted');
  const list = await eventually(async () => {
    const r = await env.request('GET', `/v1/optimize/conversions?test_id=${test.id}`, { key });
    return r.body.data.length === 2 ? r.body.data : null;
  }, 30_000);
  const bySource = Object.fromEntries(list.map((c: { source: string }) => [c.source, c]));
  t.equal(bySource.api.counted, true, 'the API conversion came first: it is the counted one');
  t.equal(bySource.tag.counted, false, 'the tag goal is listed, not counted again');
  t.equal(bySource.tag.visitor_id, visitor);
  const results = await env.request('GET', `/v1/optimize/tests/${test.id}/results`, { key });
  t.equal(results.body.data.variants.reduce((s: number, v: { conversions: number }) => s + v.conversions, 0), 1, 'the visitor converts once in the results');
});
