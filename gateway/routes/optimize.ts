import { Type, type Static } from '@sinclair/typebox';
import { FixedWindowLimiter } from '../../shared/ratelimit/fixed-window-limiter.ts';
import { BOT_USER_AGENT, Collector, type CollectVerdict } from '../../shared/optimize/collector.ts';
import { evaluateTest, resultsView } from '../../shared/optimize/completion.ts';
import { conversionView, listConversions, recordConversion, type ConversionResult } from '../../shared/optimize/conversions.ts';
import { LiveConfigs } from '../../shared/optimize/live-config.ts';
import { createProperty, getProperty, hostOnDomain, listProperties, markVerified, propertyView, PUBLIC_KEY, snippetView } from '../../shared/optimize/properties.ts';
import {
  ConversionOutcomeResponse, ConversionResponse, GoalSchema, OpSchema, PropertyResponse, ResultsResponse, SnippetResponse, TestResponse,
} from '../../shared/optimize/schemas.ts';
import { TEST_STATUSES } from '../../shared/optimize/states.ts';
import { tagScript } from '../../shared/optimize/tag-source.ts';
import { archiveTest, createTest, getTest, listTests, shipTest, testView, updateTest, type TestWithVariants } from '../../shared/optimize/tests.ts';
import { PageQuery } from '../../shared/pagination.ts';
import { asset, serve } from '../http/static-asset.ts';
import type { HttpGateway, RawReply } from '../http/server.ts';
import type { Plugin, RawRouteDoc } from '../http/types.ts';
import { ListMeta, NOT_PROTOTYPE_KEY, Nullable, UuidIdParams } from './schemas.ts';

// Optimize: website A/B tests. The API (properties, snippet, tests, ship, results, conversions) is here; the rules live
// in shared/optimize. The tag and the collector are public raw routes (registerOptimizePublic).

const TAG = 'Optimize';

const VARIANTS_EXAMPLE = [
  { id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f71', name: 'Control', is_control: true, weight: 0.5, ops: [], redirect_url: null },
  { id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f72', name: 'Call now', is_control: false, weight: 0.5,
    ops: [{ op: 'setText', selector: '#cta', value: 'Call us now' }, { op: 'setStyle', selector: '#cta', property: 'background-color', value: '#0a7f3f' }],
    redirect_url: null },
];
const TEST_EXAMPLE = {
  id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70', property_id: '0193a4c0-1111-7d21-9f3a-6c8e2b1d4f70', name: 'Homepage CTA',
  page_url: 'https://www.example.com/', hypothesis: 'A direct call to action gets more calls.',
  goal: { type: 'tel_click', selector: 'a[href^="tel:"]' }, status: 'running', traffic_split: 1, hash_version: 2, winner_variant_id: null,
  shipped_variant_id: null, variants: VARIANTS_EXAMPLE, started_at: '2026-11-20T15:04:05.000Z', completed_at: null, shipped_at: null,
  created_at: '2026-11-20T15:04:05.000Z', updated_at: '2026-11-20T15:04:05.000Z',
};
const PROPERTY_EXAMPLE = { id: '0193a4c0-1111-7d21-9f3a-6c8e2b1d4f70', domain: 'www.example.com', name: 'Example store',
  public_key: 'olpk_3kQ9vX2mZr7TbN4pLs8dWq1e', verified_at: null, created_at: '2026-11-20T15:00:00.000Z' };
const CONVERSION_EXAMPLE = { id: '0193a4d0-2222-7d21-9f3a-6c8e2b1d4f70', test_id: TEST_EXAMPLE.id, variant_id: VARIANTS_EXAMPLE[1].id,
  visitor_id: 'kJ3n_x9QwE2rT5yU8iO0pA', source: 'api', goal_type: null, value: 49.9, value_cents: 4990, currency: 'USD',
  metadata: { order_id: 'A-1001' }, counted: true, created_at: '2026-11-21T10:00:00.000Z' };

const IdParams = UuidIdParams('test');
const testReply = (status: number) => (tw: TestWithVariants) => ({ status, body: { data: testView(tw) } });

/** Any key but __proto__, constructor, toString and hasOwnProperty. */

export const optimizeRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/optimize/properties', scope: 'optimize:write', tag: TAG, summary: 'Register a website',
    description: 'Registers a website (a host name) for tests. A domain is registered once per organization (409 property_exists). '
      + 'The property\'s public key goes into the snippet; verified_at stays null until the tag first loads from a page on the domain.',
    examples: { request: { domain: 'www.example.com', name: 'Example store' }, response: { data: PROPERTY_EXAMPLE } },
    body: Type.Object({
      domain: Type.String({ minLength: 1, maxLength: 253, description: 'Host name such as www.example.com (no scheme, port or path).' }),
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Display name; defaults to the domain.' })),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: PropertyResponse }) },
    errors: ['property_exists'],
    handler: async ({ deps, principal, body }) =>
      ({ status: 201, body: { data: propertyView(await createProperty(deps.db, principal.organizationId, body)) } }),
  });
  routes.add({
    method: 'GET', path: '/v1/optimize/properties', scope: 'optimize:read', tag: TAG, summary: 'List websites',
    description: 'Lists the organization\'s registered websites, oldest first, with verified_at (set the first time the tag loaded '
      + 'from a page on the domain, as told by the request\'s Origin or Referer). Read-only.',
    examples: { response: { data: [PROPERTY_EXAMPLE] } },
    response: { status: 200, schema: Type.Object({ data: Type.Array(PropertyResponse, { description: 'The properties.' }) }) },
    handler: async ({ deps, principal }) =>
      ({ status: 200, body: { data: (await listProperties(deps.db, principal.organizationId)).map(propertyView) } }),
  });
  routes.add({
    method: 'GET', path: '/v1/optimize/snippet', scope: 'optimize:read', tag: TAG, summary: 'Get the script tag',
    description: 'The one script tag to paste into the head of every page of the website, before other scripts: it is '
      + 'synchronous on purpose, so variants apply before first paint. Defaults to the organization\'s first property.',
    examples: { response: { data: { property_id: PROPERTY_EXAMPLE.id, public_key: PROPERTY_EXAMPLE.public_key,
      script_tag: `<script src="https://api.example.com/v1/optimize/tag.js?k=${PROPERTY_EXAMPLE.public_key}"></script>` } } },
    query: Type.Object({ property_id: Type.Optional(Type.String({ description: 'The property (default: the first registered).' })) },
      { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: SnippetResponse }) },
    errors: ['not_found'],
    handler: async (ctx) => {
      const p = await getProperty(ctx.deps.db, ctx.principal.organizationId, ctx.query.property_id);
      return { status: 200, body: { data: snippetView(p, ctx.baseUrl) } };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/optimize/tests', scope: 'optimize:write', tag: TAG, summary: 'Create a test',
    description: 'Creates a test on a registered property (the one whose domain holds page_url, or property_id). 2 to 10 variants; '
      + 'exactly one control (is_control, default the first variant), which shows the page unchanged; weights default equal and are '
      + 'stored normalised to sum 1. Every op is checked: nothing that could introduce script is accepted (validation_error naming '
      + 'the op field and why). start: true starts it at once (optimize.test.created then optimize.test.started); otherwise it is a draft.',
    examples: {
      request: { name: TEST_EXAMPLE.name, page_url: TEST_EXAMPLE.page_url, hypothesis: TEST_EXAMPLE.hypothesis, goal: TEST_EXAMPLE.goal,
        variants: [{ name: 'Control', is_control: true }, { name: 'Call now', ops: VARIANTS_EXAMPLE[1].ops }], start: true },
      response: { data: TEST_EXAMPLE },
    },
    body: Type.Object({
      name: Type.String({ minLength: 1, maxLength: 200, description: 'The test name.' }),
      page_url: Type.String({ minLength: 1, maxLength: 2000, description: 'Absolute URL of the page under test, on the property\'s domain.' }),
      goal: GoalSchema,
      variants: Type.Array(Type.Object({
        name: Type.String({ minLength: 1, maxLength: 100, description: 'Variant name, unique in the test.' }),
        ops: Type.Optional(Type.Array(OpSchema, { maxItems: 50, description: 'Page changes (none for the control).' })),
        weight: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1000, description: 'Relative traffic weight (all or none).' })),
        is_control: Type.Optional(Type.Boolean({ description: 'Marks the control (at most one).' })),
        redirect_url: Type.Optional(Nullable(Type.String({ maxLength: 2000 }), 'Absolute http(s) URL to send the visitor to instead of ops.')),
      }, { additionalProperties: false, description: 'A variant.' }), { minItems: 2, maxItems: 10, description: 'The variants, control included.' }),
      traffic_split: Type.Optional(Type.Number({ minimum: 0.05, maximum: 1, description: 'Share of visitors enrolled, 0.05 to 1 (default 1).' })),
      hypothesis: Type.Optional(Type.String({ maxLength: 2000, description: 'What the test is expected to show.' })),
      start: Type.Optional(Type.Boolean({ description: 'Start serving at once (default false: a draft).' })),
      property_id: Type.Optional(Type.String({ description: 'The property; default the one whose domain holds page_url.' })),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: TestResponse }) },
    handler: async (ctx) => testReply(201)(await createTest(ctx.deps.db, ctx.principal.organizationId, ctx.body, ctx.idempotent(testReply(201)))),
  });
  routes.add({
    method: 'GET', path: '/v1/optimize/tests', scope: 'optimize:read', tag: TAG, summary: 'List tests',
    description: 'Lists the organization\'s tests, newest first, optionally of one status; paged with limit and offset. Read-only.',
    examples: { response: { data: [TEST_EXAMPLE], meta: { page_size: 20, offset: 0, total_results: 1 } } },
    query: Type.Object({
      status: Type.Optional(Type.Union(TEST_STATUSES.map((s) => Type.Literal(s)), { description: 'Only tests with this status.' })),
      limit: PageQuery.limit,
      offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, default: 0, description: 'How many tests to skip.' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(TestResponse, { description: 'The tests, newest first.' }), meta: Type.Object({
      page_size: Type.Integer({ description: 'The limit used.' }), offset: Type.Integer({ description: 'The offset used.' }),
      total_results: Type.Integer({ description: 'How many tests match.' }) }, { description: 'Paging information.' }) }) },
    handler: async ({ deps, principal, query }) => {
      const limit = query.limit ?? 20;
      const offset = query.offset ?? 0;
      const { items, total } = await listTests(deps.db, principal.organizationId, { status: query.status, limit, offset });
      return { status: 200, body: { data: items.map(testView), meta: { page_size: limit, offset, total_results: total } } };
    },
  });
  routes.add({
    method: 'GET', path: '/v1/optimize/tests/{id}', scope: 'optimize:read', tag: TAG, summary: 'Read a test',
    description: 'One test of the organization with its goal and variants. Read-only.',
    examples: { response: { data: TEST_EXAMPLE } }, params: IdParams,
    response: { status: 200, schema: Type.Object({ data: TestResponse }) },
    handler: async ({ deps, principal, params }) => ({ status: 200, body: { data: testView(await getTest(deps.db, principal.organizationId, params.id)) } }),
  });
  routes.add({
    method: 'PATCH', path: '/v1/optimize/tests/{id}', scope: 'optimize:write', tag: TAG, summary: 'Change, start or pause a test',
    description: 'Changes name, hypothesis, page_url or traffic_split, and/or moves the test with status: running starts a draft or '
      + 'resumes a paused test (optimize.test.started), paused pauses a running one. Allowed moves: draft → running, archived; '
      + 'running → paused, completed (results rule), shipped, archived; paused → running, shipped, archived; completed → shipped, '
      + 'archived; shipped → archived; archived → none. An illegal move answers 409 state_conflict with fields.entity '
      + 'optimize_test and fields.status the current status. page_url and traffic_split change only while draft, running or paused.',
    examples: { request: { status: 'paused' }, response: { data: { ...TEST_EXAMPLE, status: 'paused' } } },
    params: IdParams,
    body: Type.Object({
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The test name.' })),
      hypothesis: Type.Optional(Nullable(Type.String({ maxLength: 2000 }), 'What the test is expected to show; null clears it.')),
      page_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: 'The page under test, on the property\'s domain.' })),
      traffic_split: Type.Optional(Type.Number({ minimum: 0.05, maximum: 1, description: 'Share of visitors enrolled, 0.05 to 1.' })),
      status: Type.Optional(Type.Union([Type.Literal('running'), Type.Literal('paused')], { description: 'running starts or resumes; paused pauses.' })),
    }, { additionalProperties: false, minProperties: 1 }),
    response: { status: 200, schema: Type.Object({ data: TestResponse }) },
    errors: ['state_conflict'],
    handler: async (ctx) => testReply(200)(await updateTest(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.body, ctx.idempotent(testReply(200)))),
  });
  routes.add({
    method: 'DELETE', path: '/v1/optimize/tests/{id}', scope: 'optimize:write', tag: TAG, summary: 'Archive a test',
    description: 'Archives the test: it stops serving and counting; its results stay readable and a shipped variant stays shipped. '
      + 'Archiving an archived test answers 409 state_conflict.',
    examples: { response: { data: { ...TEST_EXAMPLE, status: 'archived' } } }, params: IdParams,
    response: { status: 200, schema: Type.Object({ data: TestResponse }) },
    errors: ['state_conflict'],
    handler: async (ctx) => testReply(200)(await archiveTest(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(testReply(200)))),
  });
  routes.add({
    method: 'POST', path: '/v1/optimize/tests/{id}/ship', scope: 'optimize:write', tag: TAG, summary: 'Ship a variant',
    description: 'Makes a variant permanent and retires the test (status shipped, optimize.test.shipped): the tag then applies that '
      + 'variant\'s ops (or redirect) to every visitor of the page, counting nothing. Allowed from running, paused and completed.',
    examples: { request: { variant_id: VARIANTS_EXAMPLE[1].id },
      response: { data: { ...TEST_EXAMPLE, status: 'shipped', shipped_variant_id: VARIANTS_EXAMPLE[1].id, shipped_at: '2026-11-25T09:00:00.000Z' } } },
    params: IdParams,
    body: Type.Object({ variant_id: Type.String({ description: 'The variant to make permanent.' }) }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: TestResponse }) },
    errors: ['state_conflict'],
    handler: async (ctx) => testReply(200)(await shipTest(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.body.variant_id, ctx.idempotent(testReply(200)))),
  });
  routes.add({
    method: 'GET', path: '/v1/optimize/tests/{id}/results', scope: 'optimize:read', tag: TAG, summary: 'Read a test\'s results',
    description: 'Per variant: impressions (visitors shown it), conversions (visitors who converted), conversion_rate, lift vs the '
      + 'control, p_value (two-sided two-proportion z-test), probability_to_beat_control (Beta(1,1) posteriors), revenue_cents; the '
      + 'decision (winner, collecting, no_difference, inconclusive) by the rules of docs/reference/optimize.md; a sample-ratio '
      + 'mismatch warning; and daily counts per variant per UTC day. Counts are the rolled-up ones (the collector\'s counters reach '
      + 'PostgreSQL about every second). Reading the results of a running test applies the completion rule: a winner or '
      + 'no_difference decision completes the test (optimize.test.winner or optimize.test.completed).',
    params: IdParams,
    examples: { response: { data: {
      test_id: TEST_EXAMPLE.id, status: 'running',
      variants: [
        { variant_id: VARIANTS_EXAMPLE[0].id, name: 'Control', is_control: true, impressions: 1000, conversions: 50, conversion_rate: 0.05,
          lift: null, p_value: null, probability_to_beat_control: null, revenue_cents: 0 },
        { variant_id: VARIANTS_EXAMPLE[1].id, name: 'Call now', is_control: false, impressions: 1000, conversions: 62, conversion_rate: 0.062,
          lift: 0.24, p_value: 0.2456, probability_to_beat_control: 0.877, revenue_cents: 0 },
      ],
      decision: { reason: 'collecting', winner_variant_id: null },
      srm: { p_value: 1, mismatch: false, warning: null },
      daily: [{ variant_id: VARIANTS_EXAMPLE[0].id, day: '2026-11-21', impressions: 1000, conversions: 50, revenue_cents: 0 }],
    } } },
    response: { status: 200, schema: Type.Object({ data: ResultsResponse }) },
    handler: async ({ deps, principal, params }) => {
      const tw = await getTest(deps.db, principal.organizationId, params.id);
      return { status: 200, body: { data: resultsView(tw, await evaluateTest(deps.db, tw)) } };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/optimize/conversions', scope: 'optimize:write', tag: TAG, summary: 'Record a conversion',
    description: 'Records a conversion from your own systems for a visitor of a test (visitor_id: window.openlineOptimize.visitorId '
      + 'or the rd_sid cookie). The variant is the visitor\'s recorded assignment, never taken from the request; a visitor the test '
      + 'never assigned answers 422 visitor_not_assigned. value is in major units (USD). metadata.order_id makes the write '
      + 'idempotent: a repeat answers recorded false. A visitor\'s first conversion counts in the results; value always adds to '
      + 'revenue. Fires optimize.conversion.created.',
    examples: { request: { test_id: TEST_EXAMPLE.id, visitor_id: CONVERSION_EXAMPLE.visitor_id, value: 49.9, metadata: { order_id: 'A-1001' } },
      response: { data: { recorded: true, test_id: TEST_EXAMPLE.id, variant_id: VARIANTS_EXAMPLE[1].id } } },
    body: Type.Object({
      test_id: Type.String({ description: 'The test.' }),
      visitor_id: Type.String({ minLength: 1, maxLength: 64, description: 'The tag\'s visitor id.' }),
      value: Type.Optional(Type.Number({ minimum: 0, maximum: 100_000_000, description: 'Value in major units (default 0).' })),
      currency: Type.Optional(Type.Literal('USD', { description: 'Only USD (the default).' })),
      // Free-form, except the names that reach a prototype (refused as unknown fields like everywhere else).
      metadata: Type.Optional(Type.Record(Type.String({ pattern: NOT_PROTOTYPE_KEY }), Type.Unknown(),
        { additionalProperties: false, description: 'Free-form (at most 4 KB); order_id makes the write idempotent.' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: ConversionOutcomeResponse }) },
    errors: ['not_found', 'visitor_not_assigned'],
    handler: async (ctx) => {
      const reply = (r: ConversionResult) => ({ status: 200, body: { data: r } });
      const { db, redis, key } = ctx.deps;
      return reply(await recordConversion(db, redis, key, ctx.principal.organizationId, ctx.body, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/optimize/conversions', scope: 'optimize:read', tag: TAG, summary: 'List a test\'s conversions',
    description: 'The conversions recorded for a test (tag goals and API conversions), newest first; paged with limit, order and cursor.',
    examples: { response: { data: [CONVERSION_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object({ test_id: Type.String({ description: 'The test.' }), ...PageQuery }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(ConversionResponse, { description: 'The conversions.' }), meta: ListMeta }) },
    errors: ['not_found'],
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params(`optimize-conversions:${query.test_id}`, query);
      const rows = await listConversions(deps.db, principal.organizationId, query.test_id, page);
      const out = deps.cursors.page(`optimize-conversions:${query.test_id}`, page, rows, (c) => c.id);
      return { status: 200, body: { data: out.data.map(conversionView), meta: out.meta } };
    },
  });
};

/** The host of the page a request came from (Origin, else Referer), or null when it sent neither. */
function pageHost(headers: Record<string, string>): string | null {
  const from = headers.origin && headers.origin !== 'null' ? headers.origin : headers.referer;
  if (!from) return null;
  try { return new URL(from).hostname.toLowerCase(); } catch { return ''; }
}

const CollectOutcomeSchema = Type.Object({
  status: Type.Integer({ description: 'The HTTP status, repeated.' }),
  accepted: Type.Integer({ description: 'Events counted.' }),
  ignored: Type.Integer({ description: 'Events not counted (not running, outside the split, repeated, a bot ...); 0 when the '
    + 'beacon was not read (malformed, rate limited, a server failure).' }),
  reason: Type.Optional(Type.String({ description: 'Why nothing was counted, when that is the case.' })),
}, { description: 'What the collector did with the beacon (every answer, errors included).' });

/** The collector's answer to each verdict of shared/optimize/collector.ts. */
const COLLECT_STATUS: Record<CollectVerdict, number> = { taken: 202, malformed: 400, foreign_origin: 403, unknown_key: 404 };

/** How the public tag and collector appear in the OpenAPI document (they are raw routes: no API key, no envelope). */
export const OPTIMIZE_PUBLIC_DOCS: RawRouteDoc[] = [
  {
    method: 'GET', path: '/v1/optimize/tag.js', tag: 'Optimize', security: 'public',
    summary: 'The Optimize tag (public)',
    description: 'The script the snippet loads (GET /v1/optimize/snippet gives the tag to paste into <head>): plain '
      + 'JavaScript with the property\'s running and shipped tests built in, at most 6 KB gzipped. It assigns each '
      + 'visitor a sticky variant from the rd_sid first-party cookie, applies the variant\'s ops before first paint '
      + '(an anti-flicker guard never hides the page longer than a bounded timeout), follows redirect variants and sends '
      + 'impressions and goals to POST /v1/optimize/collect with navigator.sendBeacon. The visitor id is on '
      + 'window.openlineOptimize.visitorId. Cacheable (ETag, max-age 60, 304 on If-None-Match) and CORS-open. The first '
      + 'request from a page on the property\'s domain (Origin or Referer) sets the property\'s verified_at. An unknown '
      + 'key answers 404 with a JavaScript comment.',
    query: Type.Object({ k: Type.String({ description: 'The property\'s public key (olpk_...); it identifies the property and grants nothing.' }) }),
    response: { status: 200, contentType: 'application/javascript', description: 'The tag with its configuration.' },
    plainErrors: { 304: 'Not modified (If-None-Match matched the ETag).', 404: 'Unknown key: a JavaScript comment, no tag.' },
    examples: { response: '(function(){ /* openline optimize tag */ })();' },
  },
  {
    method: 'POST', path: '/v1/optimize/collect', tag: 'Optimize', security: 'public',
    summary: 'Collect the tag\'s beacons (public)',
    description: 'Where the tag sends impressions and goals (any content type, as navigator.sendBeacon sends text/plain; '
      + 'at most 8 KB and 50 events; OPTIONS answers the CORS preflight). Only running tests of the key\'s own property '
      + 'count; the variant is the server\'s own hash of visitor and test, never the browser\'s word; a visitor outside '
      + 'the traffic split is ignored; a goal counts only for a visitor already shown the test, once. Bots and requests '
      + 'without a user agent are answered 202 and ignored. Every other answer carries the same JSON (application/json) '
      + 'with a reason: 400 for a malformed beacon (a public key that is not olpk_ and letters or digits is "bad key"), '
      + '403 when Origin/Referer is not on the property\'s domain, 404 for an unknown key, 429 (with Retry-After) over '
      + 'OPTIMIZE_COLLECT_LIMIT beacons per minute per client address, 500 when the server failed.',
    body: Type.Object({
      k: Type.String({ description: 'The property\'s public key.' }),
      v: Type.String({ description: 'The visitor id (the rd_sid cookie).' }),
      e: Type.Array(Type.Object({
        t: Type.Union([Type.Literal('i'), Type.Literal('g')], { description: 'i: an impression; g: a goal.' }),
        x: Type.String({ description: 'The test id.' }),
      }, { description: 'One event.' }), { maxItems: 50, description: 'The events of this beacon.' }),
    }, { description: 'One beacon.' }),
    response: { status: 202, description: 'Accepted (counted or ignored).', schema: CollectOutcomeSchema },
    plainErrors: {
      400: 'A malformed beacon (reason: "bad key", "bad visitor id", "bad events", "bad event", "not JSON", "body too '
        + 'large", ...): nothing counted.',
      403: 'Origin (or Referer) is not on the property\'s domain: nothing counted.',
      404: 'Unknown public key: nothing counted.',
      429: 'Over OPTIMIZE_COLLECT_LIMIT beacons per minute from this client address (reason "rate limited", with '
        + 'Retry-After): the beacon is not read.',
      500: 'The server failed (reason "internal error"): nothing counted; the tag does not retry.',
      503: 'PostgreSQL or Redis cannot be reached (reason "service unavailable", with Retry-After): nothing counted.',
    },
    plainJson: { schema: CollectOutcomeSchema, examples: {
      400: { status: 400, accepted: 0, ignored: 0, reason: 'bad key' },
      403: { status: 403, accepted: 0, ignored: 1, reason: 'origin is not on the property domain' },
      404: { status: 404, accepted: 0, ignored: 1, reason: 'unknown public key' },
      429: { status: 429, accepted: 0, ignored: 0, reason: 'rate limited' },
      500: { status: 500, accepted: 0, ignored: 0, reason: 'internal error' },
      503: { status: 503, accepted: 0, ignored: 0, reason: 'service unavailable' },
    } },
    examples: {
      request: { k: 'olpk_3kQ9vX2mZr7T', v: 'v_8fJ2kq0ZbY', e: [{ t: 'i', x: '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98' }] },
      response: { status: 202, accepted: 1, ignored: 0 },
    },
  },
];

/** The public tag (GET /v1/optimize/tag.js?k=) and collector (POST /v1/optimize/collect): no API key, the public key
 *  only names the property. */
export function registerOptimizePublic(gateway: HttpGateway): void {
  const { db, redis, key, config: { optimize } } = gateway.deps;
  const configs = new LiveConfigs(db);
  const collector = new Collector(redis, key, configs);
  const limiter = new FixedWindowLimiter(redis, { leaseShare: 0.01 });
  const cors = { 'access-control-allow-origin': '*', 'x-content-type-options': 'nosniff' };
  const text = (status: number, body: string): RawReply => ({ status, contentType: 'text/plain; charset=utf-8', body, headers: cors });

  gateway.addRaw('GET', '/v1/optimize/tag.js', async (req) => {
    const k = new URLSearchParams(req.query).get('k') ?? '';
    const config = PUBLIC_KEY.test(k) ? await configs.get(k) : null;
    if (!config) return text(404, '/* unknown property key */\n');
    const host = pageHost(req.headers);
    if (!config.verified && host && hostOnDomain(host, config.domain)) {
      await markVerified(db, config.propertyId);
      config.verified = true;
    }
    const js = tagScript(config, k, `${gateway.baseUrl}/v1/optimize/collect`, BOT_USER_AGENT);
    // A short max-age: a started, paused or shipped test reaches pages within a minute; the ETag makes revalidation cheap.
    const a = asset(Buffer.from(js), 'application/javascript; charset=utf-8', { ...cors, 'cache-control': 'public, max-age=60' });
    return serve(a, req.headers);
  });

  // A page posting JSON with fetch() preflights; sendBeacon's text/plain does not. Raw routes take any method uWS passes.
  gateway.addRaw('OPTIONS' as 'POST', '/v1/optimize/collect', () => ({ status: 204, contentType: 'text/plain', body: '', headers: {
    ...cors, 'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'content-type', 'access-control-max-age': '86400' } }));
  // Every answer of the collector, errors included, is its own JSON ({status, accepted, ignored, reason}).
  const outcome = (out: Static<typeof CollectOutcomeSchema>, headers: Record<string, string> = cors): RawReply =>
    ({ status: out.status, contentType: 'application/json', body: JSON.stringify(out), headers });
  const refused = (status: number, reason: string) => ({ status, accepted: 0, ignored: 0, reason });
  gateway.addRaw('POST', '/v1/optimize/collect', async (req) => {
    const d = await limiter.take(key('rl', 'optimize', req.remote), optimize.collectLimit);
    if (!d.allowed) return outcome(refused(429, 'rate limited'), { ...cors, 'retry-after': String(d.resetSeconds) });
    const { verdict, ...counts } = await collector.accept(req.body, req.headers['user-agent'], pageHost(req.headers));
    return outcome({ status: COLLECT_STATUS[verdict], ...counts });
  }, { failure: (status, reason) => outcome(refused(status, reason)) });
}
