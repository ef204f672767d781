import t from 'tap';
import { eventually, testEnv } from '../helpers/env.ts';

const env = await testEnv(t);

t.test('GET /v1/account returns exactly the snapshot fields, footprint from live rows', async (t) => {
  const org = await env.bootstrap({ org: 'Snapshot Co', numbers: 3 });
  const r = await env.request('GET', '/v1/account', { key: org.api_key });
  t.equal(r.status, 200);
  t.same(Object.keys(r.body).sort(), ['data']);
  const d = r.body.data;
  t.same(Object.keys(d).sort(), ['api_key_id', 'footprint', 'is_demo', 'organization', 'plan', 'user']);
  t.equal(d.api_key_id, org.api_key_id);
  t.same(d.organization, { id: org.organization_id, name: 'Snapshot Co', slug: 'snapshot-co' });
  t.same(Object.keys(d.user).sort(), ['email', 'id', 'name']);
  t.equal(d.user.id, org.user_id);
  t.same(d.footprint, { phone_numbers: 3, enrolled_reputation_numbers: 3, own_brand_enterprise: false });
  t.equal(d.is_demo, false);

  // A change made outside this gateway (here: by hand) shows once PostgreSQL's change notice arrives.
  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED' WHERE phone_number = $1`, [org.phone_numbers[0]]);
  const again = await eventually(async () => {
    const r = await env.request('GET', '/v1/account', { key: org.api_key });
    return r.body.data.footprint.phone_numbers === 2 ? r : null;
  }, 3000, 20);
  t.equal(again.body.data.footprint.phone_numbers, 2, 'footprint counts live rows');
});

t.test('GET /v1/me returns the user and the key scopes', async (t) => {
  const org = await env.bootstrap({ scopes: ['account:read', 'calls:read'] });
  const r = await env.request('GET', '/v1/me', { key: org.api_key });
  t.equal(r.status, 200);
  t.same(r.body.data.scopes, ['account:read', 'calls:read']);
  t.equal(r.body.data.user.id, org.user_id);
  t.equal(r.body.data.api_key.id, org.api_key_id);
});
