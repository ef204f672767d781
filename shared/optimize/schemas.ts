// Response schemas of Optimize, beside their views (properties.ts: propertyView, snippetView; tests.ts: testView,
// variantView; completion.ts: resultsView; conversions.ts: conversionView, and ConversionResult is the outcome's type).
// The op and goal schemas describe requests too: the route file (gateway/routes/optimize.ts) validates with them.
import { Type } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import { GOAL_TYPES, URL_MATCH_TYPES } from './goals.ts';
import { OP_KINDS } from './ops.ts';
import { TEST_STATUSES } from './states.ts';

export const OpSchema = Type.Object({
  op: Type.Union(OP_KINDS.map((k) => Type.Literal(k)), { description: 'The change: setText (value: the text, set as text, never markup), '
    + 'setAttribute (name, value; an allow-list of attributes, no on* handlers, no srcdoc or style; URL attributes http(s), mailto, '
    + 'tel or relative only), addClass / removeClass (value: one class name), setStyle (property, value; no url(), expression(), '
    + '@import), hide (no other field), replaceHref (value: an http(s), mailto, tel or relative URL).' }),
  selector: Type.String({ minLength: 1, maxLength: 300, description: 'CSS selector of the elements to change (no universal selector, no '
    + 'script, style, iframe, object, embed, base, meta, link, template, noscript, svg or math elements).' }),
  value: Type.Optional(Type.String({ maxLength: 5000, description: 'The text, attribute value, class name, style value or URL (see op).' })),
  name: Type.Optional(Type.String({ maxLength: 64, description: 'setAttribute only: the attribute name.' })),
  property: Type.Optional(Type.String({ maxLength: 64, description: 'setStyle only: the CSS property name.' })),
}, { additionalProperties: false, description: 'One page change. Ops that could introduce script are refused with validation_error.' });

export const GoalSchema = Type.Object({
  type: Type.Union(GOAL_TYPES.map((k) => Type.Literal(k)), { description: 'form_submit, tel_click, cta_click, selector_click (a click or '
    + 'submit on selector) or url_visit (a page URL matching url_pattern).' }),
  selector: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: 'Click and submit goals: CSS selector (required for '
    + 'cta_click and selector_click; form_submit defaults to "form", tel_click to a[href^="tel:"]).' })),
  url_match_type: Type.Optional(Type.Union(URL_MATCH_TYPES.map((k) => Type.Literal(k)), { description: 'url_visit: exact, contains, prefix '
    + 'or regex.' })),
  url_pattern: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'url_visit: the pattern matched against the full page '
    + 'URL; a regex must compile, be at most 200 characters, and not nest quantifiers or use backreferences.' })),
}, { additionalProperties: false, description: 'What counts as a conversion.' });

export const VariantResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The variant id.' }),
  name: Type.String({ description: 'The variant name (unique in the test).' }),
  is_control: Type.Boolean({ description: 'Whether this is the control (the page unchanged); exactly one per test.' }),
  weight: Type.Number({ description: 'Share of enrolled visitors sent to this variant (the weights of a test sum to 1).' }),
  ops: Type.Array(OpSchema, { description: 'The page changes this variant applies.' }),
  redirect_url: Nullable(Type.String(), 'Absolute URL the visitor is redirected to instead of applying ops; null for none.'),
}, { description: 'A variant.' });

export const TestResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The test id.' }),
  property_id: Type.String({ format: 'uuid', description: 'The property (website) the test runs on.' }),
  name: Type.String({ description: 'The test name.' }),
  page_url: Type.String({ description: 'The page the test runs on (host and path are matched; query and fragment ignored).' }),
  hypothesis: Nullable(Type.String(), 'What the test is expected to show.'),
  goal: GoalSchema,
  status: Type.Union(TEST_STATUSES.map((s) => Type.Literal(s)), { description: 'draft, running, paused, completed, shipped or archived '
    + '(see the allowed moves in the description of PATCH).' }),
  traffic_split: Type.Number({ description: 'Share of visitors enrolled (0.05 to 1); the rest see the page unchanged and are not counted.' }),
  hash_version: Type.Union([Type.Literal(1), Type.Literal(2)], { description: 'The bucketing hash the test assigns visitors with, fixed '
    + 'at creation: 2 (FNV-1a with a finalizer) for new tests, 1 (plain FNV-1a) for tests created before it existed.' }),
  winner_variant_id: Nullable(Type.String(), 'The variant the results rule declared the winner (completed tests); null otherwise.'),
  shipped_variant_id: Nullable(Type.String(), 'The variant made permanent by POST ship; null until shipped.'),
  variants: Type.Array(VariantResponse, { description: 'The variants, control included.' }),
  started_at: Nullable(Type.String({ format: 'date-time' }), 'When the test last started or resumed.'),
  completed_at: Nullable(Type.String({ format: 'date-time' }), 'When the results rule completed it.'),
  shipped_at: Nullable(Type.String({ format: 'date-time' }), 'When a variant was shipped.'),
  created_at: Type.String({ format: 'date-time', description: 'When the test was created.' }),
  updated_at: Type.String({ format: 'date-time', description: 'When the test last changed.' }),
}, { description: 'An Optimize test.' });

export const PropertyResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The property id.' }),
  domain: Type.String({ description: 'The registered host name; pages on it and its subdomains can run tests.' }),
  name: Type.String({ description: 'A display name (defaults to the domain).' }),
  public_key: Type.String({ description: 'Identifies the property to the tag and the collector; grants nothing else.' }),
  verified_at: Nullable(Type.String({ format: 'date-time' }), 'When the tag first loaded from a page on the domain; null before.'),
  created_at: Type.String({ format: 'date-time', description: 'When the property was registered.' }),
}, { description: 'A registered website.' });

export const ConversionResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The conversion id.' }),
  test_id: Type.String({ format: 'uuid', description: 'The test.' }),
  variant_id: Type.String({ format: 'uuid', description: 'The visitor\'s recorded variant.' }),
  visitor_id: Type.String({ description: 'The tag\'s visitor id (rd_sid cookie).' }),
  source: Type.Union([Type.Literal('tag'), Type.Literal('api')], { description: 'tag: the test\'s goal reached in the browser; api: POST /v1/optimize/conversions.' }),
  goal_type: Nullable(Type.String(), 'tag conversions: the goal type reached.'),
  value: Type.Number({ description: 'The value in major units (USD).' }),
  value_cents: Type.Integer({ description: 'The value in cents.' }),
  currency: Type.String({ description: 'Always USD.' }),
  metadata: Type.Record(Type.String(), Type.Unknown(), { description: 'The metadata sent with an API conversion.' }),
  counted: Type.Boolean({ description: 'Whether this is the visitor\'s first conversion of the test (the one results count).' }),
  created_at: Type.String({ format: 'date-time', description: 'When it was recorded.' }),
}, { description: 'A conversion.' });

export const SnippetResponse = Type.Object({
  property_id: Type.String({ description: 'The property.' }),
  public_key: Type.String({ description: 'The property\'s public key (identifies it; grants nothing else).' }),
  script_tag: Type.String({ description: 'The tag to paste into <head>.' }),
}, { description: 'The snippet.' });

export const ResultsResponse = Type.Object({
  test_id: Type.String({ description: 'The test.' }),
  status: Type.String({ description: 'The test status after the completion rule ran.' }),
  variants: Type.Array(Type.Object({
    variant_id: Type.String({ description: 'The variant.' }), name: Type.String({ description: 'Its name.' }),
    is_control: Type.Boolean({ description: 'Whether it is the control.' }),
    impressions: Type.Integer({ description: 'Visitors shown the variant (once each).' }),
    conversions: Type.Integer({ description: 'Visitors who converted (once each).' }),
    conversion_rate: Type.Number({ description: 'conversions / impressions (0 without impressions).' }),
    lift: Nullable(Type.Number(), 'Relative change of the conversion rate vs the control; null for the control or a zero control rate.'),
    p_value: Nullable(Type.Number(), 'Two-sided two-proportion z-test vs the control; null for the control or too little data.'),
    probability_to_beat_control: Nullable(Type.Number(), 'P(rate > control rate) under Beta(1,1) priors; null for the control.'),
    revenue_cents: Type.Integer({ description: 'Sum of the values of the variant\'s conversions, in cents.' }),
  }, { additionalProperties: true, description: 'One variant\'s results.' }), { description: 'Per variant.' }),
  decision: Type.Object({
    reason: Type.Union(['winner', 'collecting', 'no_difference', 'inconclusive'].map((r) => Type.Literal(r)), { description: 'The decision.' }),
    winner_variant_id: Nullable(Type.String(), 'Set only for winner.'),
  }, { additionalProperties: true, description: 'The decision and why.' }),
  srm: Type.Object({
    p_value: Nullable(Type.Number(), 'Chi-square goodness-of-fit p-value of the observed traffic vs the weights.'),
    mismatch: Type.Boolean({ description: 'p_value < 0.001: traffic departs from the weights; distrust the results.' }),
    warning: Nullable(Type.String(), 'A sentence when mismatch is true.'),
  }, { additionalProperties: true, description: 'Sample-ratio mismatch check.' }),
  daily: Type.Array(Type.Object({
    variant_id: Type.String({ description: 'The variant.' }), day: Type.String({ description: 'UTC day, YYYY-MM-DD.' }),
    impressions: Type.Integer({ description: 'Impressions that day.' }), conversions: Type.Integer({ description: 'Conversions that day.' }),
    revenue_cents: Type.Integer({ description: 'Revenue that day, cents.' }),
  }, { description: 'One variant\'s day.' }), { description: 'Per variant per UTC day.' }),
}, { description: 'The results.' });

export const ConversionOutcomeResponse = Type.Object({
  recorded: Type.Boolean({ description: 'false when a conversion with this metadata.order_id was already recorded.' }),
  test_id: Type.String({ description: 'The test.' }),
  variant_id: Type.String({ description: 'The visitor\'s recorded variant.' }),
}, { description: 'The outcome.' });
