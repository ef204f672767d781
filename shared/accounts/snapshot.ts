import type { Db } from '../db.ts';
import type { Principal } from './principal.ts';

// GET /v1/account is the hottest authenticated read, so its two parts are fetched differently:
// - identity (organization name/slug/plan, user email/name) changes rarely and nothing in the API edits it yet: it
//   is cached per process for a few seconds (single-flight per organization and user). Whatever starts editing
//   these rows must call forgetAccountIdentity().
// - the footprint is counted from live rows for every request. Concurrent requests are batched: every request of
//   one event-loop turn waits for one grouped query that is sent after all of them arrived, so each answer reflects
//   the rows as they were after its request came in, never a cached count.
const IDENTITY_TTL_MS = 5_000;

interface Identity {
  plan: string;
  user: { id: string; email: string; name: string | null } | null;
  organization: { id: string; name: string; slug: string };
}
interface Footprint { phone_numbers: number; enrolled_reputation_numbers: number }

interface Waiter { resolve(f: Footprint): void; reject(e: unknown): void }

class AccountReader {
  private readonly identities = new Map<string, { value: Promise<Identity>; expires: number }>();
  private pending = new Map<string, Waiter[]>();
  private scheduled = false;

  constructor(private readonly db: Db) {}

  identity(organizationId: string, userId: string | null, now = Date.now()): Promise<Identity> {
    const k = `${organizationId}/${userId ?? ''}`;
    const hit = this.identities.get(k);
    if (hit && hit.expires > now) return hit.value;
    const value = this.db.one(
      `SELECT o.id AS org_id, o.name AS org_name, o.slug, o.plan, u.id AS user_id, u.email, u.name AS user_name
         FROM organizations o LEFT JOIN users u ON u.id = $2 AND u.organization_id = o.id
        WHERE o.id = $1`,
      [organizationId, userId],
    ).then((row): Identity => ({
      plan: row.plan,
      user: row.user_id ? { id: row.user_id, email: row.email, name: row.user_name ?? null } : null,
      organization: { id: row.org_id, name: row.org_name, slug: row.slug },
    }));
    if (this.identities.size > 10_000) this.identities.clear();
    this.identities.set(k, { value, expires: now + IDENTITY_TTL_MS });
    value.catch(() => { if (this.identities.get(k)?.value === value) this.identities.delete(k); });
    return value;
  }

  forget(organizationId: string): void {
    for (const k of this.identities.keys()) if (k.startsWith(`${organizationId}/`)) this.identities.delete(k);
  }

  footprint(organizationId: string): Promise<Footprint> {
    return new Promise((resolve, reject) => {
      let waiters = this.pending.get(organizationId);
      if (!waiters) this.pending.set(organizationId, (waiters = []));
      waiters.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    this.scheduled = false;
    try {
      const rows = await this.db.any({
        name: 'account-footprint',
        text: `SELECT organization_id, count(*)::int AS phones, count(reputation_enrolled_at)::int AS enrolled
                 FROM phone_numbers
                WHERE organization_id = ANY($1::uuid[]) AND status <> 'RELEASED'
                GROUP BY organization_id`,
        values: [[...batch.keys()]],
      });
      const byOrg = new Map(rows.map((r) => [r.organization_id as string, r]));
      for (const [org, waiters] of batch) {
        const r = byOrg.get(org);
        const f = { phone_numbers: r?.phones ?? 0, enrolled_reputation_numbers: r?.enrolled ?? 0 };
        for (const w of waiters) w.resolve(f);
      }
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
    }
  }
}

const readers = new WeakMap<Db, AccountReader>();
const readerOf = (db: Db) => {
  let r = readers.get(db);
  if (!r) readers.set(db, (r = new AccountReader(db)));
  return r;
};

/** Drops the cached organization/user part of the snapshots of an organization (call after editing those rows). */
export function forgetAccountIdentity(db: Db, organizationId: string): void {
  readers.get(db)?.forget(organizationId);
}

/** The organization and user of a credential (cached for a few seconds). */
export function accountIdentity(db: Db, p: Principal): Promise<Identity> {
  return readerOf(db).identity(p.organizationId, p.userId);
}

/** The account snapshot of GET /v1/account: exactly the reference's fields, footprint counted from live rows. */
export async function accountSnapshot(db: Db, p: Principal) {
  const reader = readerOf(db);
  const [id, fp] = await Promise.all([reader.identity(p.organizationId, p.userId), reader.footprint(p.organizationId)]);
  return {
    api_key_id: p.keyId,
    plan: id.plan,
    user: id.user,
    organization: id.organization,
    footprint: {
      phone_numbers: fp.phone_numbers,
      enrolled_reputation_numbers: fp.enrolled_reputation_numbers,
      // Own-brand enterprise registration arrives with the caller-trust area; until then no organization has one.
      own_brand_enterprise: false,
    },
    is_demo: p.isDemo,
  };
}
