import type { Static } from '@sinclair/typebox';
import type { Db, Tx, WithinTx } from '../db.ts';
import { notFound, validationError } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { CURRENT_HASH_VERSION, type HashVersion } from './bucketing.ts';
import { goalErrors, normalizeGoal, type Goal } from './goals.ts';
import { opErrors, unsafeUrlReason, type Op } from './ops.ts';
import { hostOnDomain, type PropertyRow } from './properties.ts';
import type { TestResponse, VariantResponse } from './schemas.ts';
import { assertMove, isEditable, type TestStatus } from './states.ts';

// Optimize tests: create, read, change, start/pause, archive, ship, complete. Each state change and its event commit
// in one transaction (events through the outbox, flat body: { event, occurred_at, test }).

export const MIN_VARIANTS = 2;
export const MAX_VARIANTS = 10;

export interface TestRow {
  id: string; organization_id: string; property_id: string; name: string; page_url: string; hypothesis: string | null;
  goal: Goal; status: TestStatus; traffic_split: string | number; hash_version: HashVersion; winner_variant_id: string | null;
  shipped_variant_id: string | null; started_at: Date | null; completed_at: Date | null; shipped_at: Date | null;
  archived_at: Date | null; created_at: Date; updated_at: Date;
}
export interface VariantRow {
  id: string; test_id: string; position: number; name: string; is_control: boolean; weight: string | number;
  ops: Op[]; redirect_url: string | null;
}
export interface TestWithVariants { test: TestRow; variants: VariantRow[] }

export interface VariantInput { name: string; ops?: Op[]; weight?: number; is_control?: boolean; redirect_url?: string | null }
export interface TestInput {
  name: string; page_url: string; goal: Goal; variants: VariantInput[]; traffic_split?: number; hypothesis?: string;
  start?: boolean; property_id?: string;
}
export interface TestPatch { name?: string; hypothesis?: string | null; page_url?: string; traffic_split?: number; status?: 'running' | 'paused' }

export const variantView = (v: VariantRow): Static<typeof VariantResponse> => ({
  id: v.id, name: v.name, is_control: v.is_control, weight: Number(v.weight), ops: v.ops, redirect_url: v.redirect_url,
});

export function testView({ test: t, variants }: TestWithVariants): Static<typeof TestResponse> {
  return {
    id: t.id, property_id: t.property_id, name: t.name, page_url: t.page_url, hypothesis: t.hypothesis, goal: t.goal,
    status: t.status, traffic_split: Number(t.traffic_split), hash_version: t.hash_version, winner_variant_id: t.winner_variant_id,
    shipped_variant_id: t.shipped_variant_id, variants: variants.map(variantView),
    started_at: t.started_at?.toISOString() ?? null, completed_at: t.completed_at?.toISOString() ?? null,
    shipped_at: t.shipped_at?.toISOString() ?? null, created_at: t.created_at.toISOString(), updated_at: t.updated_at.toISOString(),
  };
}

/** The reference's `test` of an event body. */
const eventTest = ({ test: t, variants }: TestWithVariants) => ({
  id: t.id, name: t.name, status: t.status, page_url: t.page_url, winner_variant_id: t.winner_variant_id,
  variants: variants.map(variantView),
});

async function fireTestEvent(tx: Tx, tw: TestWithVariants, event: 'created' | 'started' | 'completed' | 'winner' | 'shipped') {
  await recordEvent(tx, { organizationId: tw.test.organization_id, eventType: `optimize.test.${event}`, data: { test: eventTest(tw) } });
}

/** Why a page URL is refused for a property, or null. */
function pageUrlReason(pageUrl: string, property: PropertyRow | null): string | null {
  let u: URL;
  try { u = new URL(pageUrl); } catch { return 'must be an absolute http(s) URL'; }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must be an absolute http(s) URL';
  if (property && !hostOnDomain(u.hostname, property.domain)) return `must be on the property's domain ${property.domain}`;
  return null;
}

/** Whether two URLs name the same page as the tag matches pages (host and path, trailing slash ignored). */
function samePage(a: string, b: string): boolean {
  try {
    const x = new URL(a);
    const y = new URL(b);
    return x.host === y.host && x.pathname.replace(/\/+$/, '') === y.pathname.replace(/\/+$/, '');
  } catch {
    return false;
  }
}

/** Semantic checks beyond the schema: variants, the control, weights, ops safety, redirects, the goal. */
function testErrors(input: TestInput): Record<string, string> {
  const out: Record<string, string> = { ...goalErrors(input.goal) };
  const vs = input.variants;
  if (vs.length < MIN_VARIANTS || vs.length > MAX_VARIANTS) out.variants = `must have ${MIN_VARIANTS} to ${MAX_VARIANTS} variants`;
  const controls = vs.filter((v) => v.is_control).length;
  if (controls > 1) out.variants = 'must have exactly one control (is_control true on one variant)';
  const weighted = vs.filter((v) => v.weight !== undefined).length;
  if (weighted !== 0 && weighted !== vs.length) out.variants = 'give a weight to every variant or to none (equal weights)';
  const names = new Set<string>();
  const controlIndex = controls === 0 ? 0 : vs.findIndex((v) => v.is_control);
  vs.forEach((v, i) => {
    if (names.has(v.name)) out[`variants[${i}].name`] = 'must be unique within the test';
    names.add(v.name);
    Object.assign(out, opErrors(v.ops ?? [], `variants[${i}].ops`));
    if (i === controlIndex && ((v.ops?.length ?? 0) > 0 || v.redirect_url)) {
      out[`variants[${i}]`] = 'the control shows the page unchanged: no ops and no redirect_url';
    }
    if (v.redirect_url) {
      let why = unsafeUrlReason(v.redirect_url);
      if (!why && !/^https?:\/\//i.test(v.redirect_url)) why = 'must be an absolute http(s) URL';
      if (!why && (v.ops?.length ?? 0) > 0) why = 'a redirect variant has no ops (the visitor leaves the page)';
      if (!why && samePage(v.redirect_url, input.page_url)) why = 'must not be the test\'s own page (the visitor would be redirected forever)';
      if (why) out[`variants[${i}].redirect_url`] = why;
    }
  });
  return out;
}

async function loadVariants(q: Db | Tx, testIds: string[]): Promise<Map<string, VariantRow[]>> {
  const rows: VariantRow[] = testIds.length
    ? await q.any('SELECT * FROM optimize_variants WHERE test_id = ANY($1::uuid[]) ORDER BY test_id, position', [testIds]) : [];
  const by = new Map<string, VariantRow[]>();
  for (const r of rows) {
    const list = by.get(r.test_id) ?? [];
    list.push(r);
    by.set(r.test_id, list);
  }
  return by;
}

export async function createTest(db: Db, organizationId: string, input: TestInput,
  within?: WithinTx<TestWithVariants>): Promise<TestWithVariants> {
  const errors = testErrors(input);
  let property: PropertyRow | null = null;
  if (input.property_id !== undefined) {
    property = isUuid(input.property_id)
      ? await db.oneOrNone('SELECT * FROM optimize_properties WHERE id = $1 AND organization_id = $2', [input.property_id, organizationId]) : null;
    if (!property) errors.property_id = 'is not a property of this organization';
  } else {
    let host = '';
    try { host = new URL(input.page_url).hostname; } catch { /* reported below */ }
    const props: PropertyRow[] = await db.any('SELECT * FROM optimize_properties WHERE organization_id = $1 ORDER BY length(domain) DESC', [organizationId]);
    property = props.find((p) => hostOnDomain(host, p.domain)) ?? null;
    if (!property && host) errors.page_url = `no property is registered for ${host} (POST /v1/optimize/properties first)`;
  }
  const pageWhy = pageUrlReason(input.page_url, property);
  if (pageWhy) errors.page_url = pageWhy;
  if (Object.keys(errors).length) throw validationError(errors);

  const id = uuidv7();
  const vs = input.variants;
  const controlIndex = Math.max(0, vs.findIndex((v) => v.is_control));
  const totalWeight = vs.reduce((s, v) => s + (v.weight ?? 1), 0);
  const status: TestStatus = input.start ? 'running' : 'draft';
  const out = await db.tx(async (tx) => {
    const test: TestRow = await tx.one(
      `INSERT INTO optimize_tests (id, organization_id, property_id, name, page_url, hypothesis, goal, status, traffic_split,
                                   hash_version, started_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $8 = 'running' THEN now() END) RETURNING *`,
      [id, organizationId, property!.id, input.name, input.page_url, input.hypothesis ?? null, JSON.stringify(normalizeGoal(input.goal)),
        status, input.traffic_split ?? 1, CURRENT_HASH_VERSION]);
    const variants: VariantRow[] = [];
    for (const [i, v] of vs.entries()) {
      variants.push(await tx.one(
        `INSERT INTO optimize_variants (id, test_id, position, name, is_control, weight, ops, redirect_url)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
        [uuidv7(), id, i, v.name, i === controlIndex, Math.round(((v.weight ?? 1) / totalWeight) * 1e6) / 1e6,
          JSON.stringify(v.ops ?? []), v.redirect_url ?? null]));
    }
    const tw = { test, variants };
    await fireTestEvent(tx, { test: { ...test, status: 'draft' }, variants }, 'created');
    if (input.start) await fireTestEvent(tx, tw, 'started');
    await within?.(tx, tw);
    return tw;
  });
  wakeRelay(db);
  return out;
}

export async function findTest(q: Db | Tx, organizationId: string, id: string, lock = false): Promise<TestWithVariants | null> {
  if (!isUuid(id)) return null;
  const test: TestRow | null = await q.oneOrNone(
    `SELECT * FROM optimize_tests WHERE id = $1 AND organization_id = $2${lock ? ' FOR UPDATE' : ''}`, [id, organizationId]);
  if (!test) return null;
  return { test, variants: (await loadVariants(q, [id])).get(id) ?? [] };
}

export async function getTest(q: Db | Tx, organizationId: string, id: string, lock = false): Promise<TestWithVariants> {
  const tw = await findTest(q, organizationId, id, lock);
  if (!tw) throw notFound(`Test ${id}`);
  return tw;
}

export async function listTests(db: Db, organizationId: string, o: { status?: TestStatus; limit: number; offset: number }) {
  const where = o.status ? ' AND status = $2' : '';
  const args: unknown[] = [organizationId, ...(o.status ? [o.status] : [])];
  const [tests, total] = await Promise.all([
    db.any<TestRow>(`SELECT * FROM optimize_tests WHERE organization_id = $1${where} ORDER BY id DESC LIMIT ${o.limit} OFFSET ${o.offset}`, args),
    db.one(`SELECT count(*)::int AS n FROM optimize_tests WHERE organization_id = $1${where}`, args),
  ]);
  const vs = await loadVariants(db, tests.map((t) => t.id));
  return { items: tests.map((test) => ({ test, variants: vs.get(test.id) ?? [] })), total: total.n as number };
}

/** Changes fields and/or starts or pauses the test (409 naming the current status on an illegal move). */
export async function updateTest(db: Db, organizationId: string, id: string, patch: TestPatch,
  within?: WithinTx<TestWithVariants>): Promise<TestWithVariants> {
  const out = await db.tx(async (tx) => {
    const cur = await getTest(tx, organizationId, id, true);
    const from = cur.test.status;
    if (from === 'archived') assertMove(from, 'running', 'be changed');
    if ((patch.page_url !== undefined || patch.traffic_split !== undefined) && !isEditable(from)) {
      assertMove(from, 'running', 'change page_url or traffic_split');
    }
    if (patch.page_url !== undefined) {
      const property: PropertyRow = await tx.one('SELECT * FROM optimize_properties WHERE id = $1', [cur.test.property_id]);
      const why = pageUrlReason(patch.page_url, property);
      if (why) throw validationError({ page_url: why });
    }
    let to = from;
    if (patch.status && patch.status !== from) {
      assertMove(from, patch.status, patch.status === 'running' ? 'start' : 'pause');
      to = patch.status;
    }
    const test: TestRow = await tx.one(
      `UPDATE optimize_tests SET name = COALESCE($2, name), hypothesis = CASE WHEN $3 THEN $4 ELSE hypothesis END,
              page_url = COALESCE($5, page_url), traffic_split = COALESCE($6, traffic_split), status = $7,
              started_at = CASE WHEN $7 = 'running' AND status <> 'running' THEN now() ELSE started_at END, updated_at = now()
        WHERE id = $1 RETURNING *`,
      [id, patch.name ?? null, patch.hypothesis !== undefined, patch.hypothesis ?? null, patch.page_url ?? null,
        patch.traffic_split ?? null, to]);
    const tw = { test, variants: cur.variants };
    if (to === 'running' && from !== 'running') await fireTestEvent(tx, tw, 'started');
    await within?.(tx, tw);
    return tw;
  });
  wakeRelay(db);
  return out;
}

/** DELETE: archived; results and a shipped variant are kept. */
export async function archiveTest(db: Db, organizationId: string, id: string, within?: WithinTx<TestWithVariants>): Promise<TestWithVariants> {
  return db.tx(async (tx) => {
    const cur = await getTest(tx, organizationId, id, true);
    assertMove(cur.test.status, 'archived', 'be archived');
    const test: TestRow = await tx.one(
      `UPDATE optimize_tests SET status = 'archived', archived_at = now(), updated_at = now() WHERE id = $1 RETURNING *`, [id]);
    const tw = { test, variants: cur.variants };
    await within?.(tx, tw);
    return tw;
  });
}

/** POST ship: the variant becomes permanent (the tag applies it to every visitor) and the test is retired. */
export async function shipTest(db: Db, organizationId: string, id: string, variantId: string,
  within?: WithinTx<TestWithVariants>): Promise<TestWithVariants> {
  const out = await db.tx(async (tx) => {
    const cur = await getTest(tx, organizationId, id, true);
    if (!cur.variants.some((v) => v.id === variantId)) throw validationError({ variant_id: 'is not a variant of this test' });
    assertMove(cur.test.status, 'shipped', 'be shipped');
    const test: TestRow = await tx.one(
      `UPDATE optimize_tests SET status = 'shipped', shipped_variant_id = $2, shipped_at = now(), updated_at = now()
        WHERE id = $1 RETURNING *`, [id, variantId]);
    const tw = { test, variants: cur.variants };
    await fireTestEvent(tx, tw, 'shipped');
    await within?.(tx, tw);
    return tw;
  });
  wakeRelay(db);
  return out;
}

/** The results rule finished a running test: completed, with the winner when there is one. Returns false when the test
 *  was no longer running (another replica completed it, or it was paused meanwhile). */
export async function completeTest(db: Db, testId: string, winnerVariantId: string | null): Promise<boolean> {
  const done = await db.tx(async (tx) => {
    const test: TestRow | null = await tx.oneOrNone(
      `UPDATE optimize_tests SET status = 'completed', winner_variant_id = $2, completed_at = now(), updated_at = now()
        WHERE id = $1 AND status = 'running' RETURNING *`, [testId, winnerVariantId]);
    if (!test) return false;
    const variants = (await loadVariants(tx, [testId])).get(testId) ?? [];
    await fireTestEvent(tx, { test, variants }, winnerVariantId ? 'winner' : 'completed');
    return true;
  });
  if (done) wakeRelay(db);
  return done;
}
