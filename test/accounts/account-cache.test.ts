// GET /v1/account is served from memory and kept in step with the database: this gateway's own writes show on the
// next request, writes by anyone else (other processes, SQL by hand) show once PostgreSQL's change notice
// arrives, and a lost LISTEN connection neither serves stale data nor stops the cache for good.
import t from 'tap';
import { eventually, testEnv } from '../helpers/env.ts';

const env = await testEnv(t);
const NOTICE_MS = 3000;

const account = async (key: string) => {
  const r = await env.request('GET', '/v1/account', { key });
  if (r.status !== 200) throw new Error(`GET /v1/account answered ${r.status}: ${r.text}`);
  return r.body.data;
};
/** Waits (briefly) until GET /v1/account satisfies `ok`. */
const until = (key: string, ok: (d: any) => boolean) =>
  eventually(async () => { const d = await account(key); return ok(d) ? d : null; }, NOTICE_MS, 20);

t.test('this gateway\'s own writes show on the very next request', async (t) => {
  const org = await env.bootstrap({ numbers: 2 });
  t.equal((await account(org.api_key)).footprint.phone_numbers, 2, 'warm: 2 numbers');
  const bought = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { area_code: '415' } });
  t.equal(bought.status, 202);
  const after = await account(org.api_key);
  t.equal(after.footprint.phone_numbers, 3, 'a purchase counts at once');
  t.equal(after.footprint.enrolled_reputation_numbers, 3, 'and is enrolled at once');
  const released = await env.request('DELETE', `/v1/phone-numbers/${bought.body.data.id}`, { key: org.api_key });
  t.equal(released.status, 200, 'released');
  t.equal((await account(org.api_key)).footprint.phone_numbers, 2, 'a release counts at once');
});

t.test('changes committed elsewhere arrive with the change notice', async (t) => {
  const org = await env.bootstrap({ org: 'Notice Co', numbers: 3 });
  const first = await account(org.api_key);
  t.same(first.footprint, { phone_numbers: 3, enrolled_reputation_numbers: 3, own_brand_enterprise: false });

  await env.db.none(`UPDATE phone_numbers SET reputation_enrolled_at = NULL WHERE phone_number = $1`, [org.phone_numbers[0]]);
  await until(org.api_key, (d) => d.footprint.enrolled_reputation_numbers === 2);
  t.pass('an enrollment change');

  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED' WHERE phone_number = $1`, [org.phone_numbers[1]]);
  await until(org.api_key, (d) => d.footprint.phone_numbers === 2);
  t.pass('a release');

  await env.db.none(`UPDATE organizations SET name = 'Renamed Co', plan = 'growth' WHERE id = $1`, [org.organization_id]);
  const renamed = await until(org.api_key, (d) => d.organization.name === 'Renamed Co');
  t.equal(renamed.plan, 'growth', 'organization name and plan');

  await env.db.none(`UPDATE users SET email = 'new@example.com' WHERE id = $1`, [org.user_id]);
  await until(org.api_key, (d) => d.user.email === 'new@example.com');
  t.pass('the user');

  const other = await env.bootstrap({ numbers: 1 });
  await account(other.api_key);
  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED' WHERE organization_id = $1`, [org.organization_id]);
  await until(org.api_key, (d) => d.footprint.phone_numbers === 0);
  t.equal((await account(other.api_key)).footprint.phone_numbers, 1, 'another organization is unaffected');
});

t.test('a lost LISTEN connection: nothing stale is served, and the cache comes back', async (t) => {
  const org = await env.bootstrap({ numbers: 4 });
  t.equal((await account(org.api_key)).footprint.phone_numbers, 4);
  const listener = () => env.db.oneOrNone<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN "ol_account"'`);
  const before = await listener();
  t.ok(before, 'the gateway LISTENs on ol_account');
  await env.db.one('SELECT pg_terminate_backend($1)', [before!.pid]);
  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED' WHERE phone_number = $1`, [org.phone_numbers[0]]);
  await until(org.api_key, (d) => d.footprint.phone_numbers === 3);
  t.pass('a change made while the connection was down shows');

  const again = await eventually(async () => { const l = await listener(); return l && l.pid !== before!.pid ? l : null; }, 10_000);
  t.ok(again, 'the gateway LISTENs again');
  await account(org.api_key);
  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED' WHERE phone_number = $1`, [org.phone_numbers[1]]);
  await until(org.api_key, (d) => d.footprint.phone_numbers === 2);
  t.pass('and notices work after the reconnect');
});
