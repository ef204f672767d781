import type { Db } from '../db.ts';
import type { Principal } from './principal.ts';

/** The account snapshot of GET /v1/account: exactly the reference's fields, footprint counted from live rows. */
export async function accountSnapshot(db: Db, p: Principal) {
  const row = await db.one(
    `SELECT o.id AS org_id, o.name AS org_name, o.slug, o.plan,
            u.id AS user_id, u.email, u.name AS user_name,
            (SELECT count(*) FROM phone_numbers n WHERE n.organization_id = o.id AND n.status <> 'RELEASED')::int AS phones,
            (SELECT count(*) FROM phone_numbers n WHERE n.organization_id = o.id AND n.status <> 'RELEASED'
               AND n.reputation_enrolled_at IS NOT NULL)::int AS enrolled
       FROM organizations o LEFT JOIN users u ON u.id = $2
      WHERE o.id = $1`,
    [p.organizationId, p.userId],
  );
  return {
    api_key_id: p.keyId,
    plan: row.plan as string,
    user: row.user_id ? { id: row.user_id as string, email: row.email as string, name: (row.user_name as string) ?? null } : null,
    organization: { id: row.org_id as string, name: row.org_name as string, slug: row.slug as string },
    footprint: {
      phone_numbers: row.phones as number,
      enrolled_reputation_numbers: row.enrolled as number,
      // Own-brand enterprise registration arrives with the caller-trust area; until then no organization has one.
      own_brand_enterprise: false,
    },
    is_demo: p.isDemo,
  };
}
