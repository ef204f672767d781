import type { Db } from '../db.ts';
import type { HashVersion } from './bucketing.ts';
import type { Goal } from './goals.ts';
import type { Op } from './ops.ts';

// What the tag and the collector need to know about a property, read from PostgreSQL and kept in-process for a
// moment (CONFIG_TTL_MS): its running tests (served and counted) and its shipped variants (shown to everyone). The
// collector only counts tests of this list, so a page cannot report a test of another property.

export const CONFIG_TTL_MS = 1000;

export interface LiveVariant { id: string; weight: number; ops: Op[]; redirect_url: string | null; is_control: boolean }
export interface LiveTest { id: string; page_url: string; traffic_split: number; hash_version: HashVersion; goal: Goal; variants: LiveVariant[] }
export interface ShippedChange { id: string; page_url: string; ops: Op[]; redirect_url: string | null }
export interface PropertyConfig {
  propertyId: string;
  organizationId: string;
  domain: string;
  verified: boolean;
  running: LiveTest[];
  shipped: ShippedChange[];
  byId: Map<string, LiveTest>;
}

async function load(db: Db, publicKey: string): Promise<PropertyConfig | null> {
  const p = await db.oneOrNone('SELECT id, organization_id, domain, verified_at FROM optimize_properties WHERE public_key = $1', [publicKey]);
  if (!p) return null;
  const rows = await db.any(
    `SELECT t.id, t.page_url, t.traffic_split, t.hash_version, t.goal, t.status, t.shipped_variant_id,
            json_agg(json_build_object('id', v.id, 'weight', v.weight, 'ops', v.ops, 'redirect_url', v.redirect_url,
                     'is_control', v.is_control) ORDER BY v.position) AS variants
       FROM optimize_tests t JOIN optimize_variants v ON v.test_id = t.id
      WHERE t.property_id = $1 AND (t.status = 'running' OR t.shipped_variant_id IS NOT NULL)
      GROUP BY t.id ORDER BY t.id`, [p.id]);
  const running: LiveTest[] = [];
  const shipped: ShippedChange[] = [];
  for (const r of rows) {
    const variants: LiveVariant[] = r.variants.map((v: LiveVariant) => ({ ...v, weight: Number(v.weight) }));
    if (r.status === 'running') running.push({ id: r.id, page_url: r.page_url, traffic_split: Number(r.traffic_split), hash_version: r.hash_version, goal: r.goal, variants });
    else {
      const v = variants.find((x) => x.id === r.shipped_variant_id)!;
      shipped.push({ id: r.id, page_url: r.page_url, ops: v.ops, redirect_url: v.redirect_url });
    }
  }
  return { propertyId: p.id, organizationId: p.organization_id, domain: p.domain, verified: p.verified_at !== null,
    running, shipped, byId: new Map(running.map((t) => [t.id, t])) };
}

/** Per-process cache of property configs by public key (misses cached too, so unknown keys cost no query each). */
export class LiveConfigs {
  private readonly cache = new Map<string, { at: number; value: Promise<PropertyConfig | null> }>();
  constructor(private readonly db: Db, private readonly ttlMs = CONFIG_TTL_MS) {}

  get(publicKey: string): Promise<PropertyConfig | null> {
    const now = Date.now();
    const hit = this.cache.get(publicKey);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    if (this.cache.size > 10_000) this.cache.clear();
    const value = load(this.db, publicKey);
    this.cache.set(publicKey, { at: now, value });
    value.catch(() => this.cache.delete(publicKey));
    return value;
  }

  forget(publicKey: string): void { this.cache.delete(publicKey); }
}
