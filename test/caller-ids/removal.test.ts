// A call never goes out from a caller ID its organization removed. With the workers down, calls are queued from
// verified caller IDs. Removing one cancels its queued calls at once; and when that follow-up never ran (the
// gateway died right after the commit; here the row is removed in SQL), origination re-checks the caller ID under
// the call's lock and ends the call without dialing. A call from a caller ID still verified goes out.
import t from 'tap';
import { callEnv, callOrg, channelsUsed, dial, settled } from '../calls/helpers.ts';
import { verifiedCallerId } from './helpers.ts';

const { env } = await callEnv(t, {}, { workers: false });
const org = await callOrg(env);
const kept = await verifiedCallerId(env, org.api_key, '+12015550160');
const removed = await verifiedCallerId(env, org.api_key, '+12015550161');
const lost = await verifiedCallerId(env, org.api_key, '+12015550162');

const queue = async (from: string, to: string) => {
  const r = await dial(env, { ...org, from }, to);
  if (r.status !== 202) throw new Error(`dial: ${r.status} ${r.text}`);
  return r.body.data.call_id as string;
};
const neverDialed = (t: Pick<typeof import('tap').default, 'match' | 'ok'>, c: any) => {
  t.match(c, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'caller_id_released', cost_cents: 0 });
  t.ok(c.legs.every((l: { status: string; originated_at: string | null }) => l.status === 'PENDING' && l.originated_at === null), 'no leg originated');
};

t.test('removing a caller ID cancels its queued calls at once', async (t) => {
  const id = await queue(removed.phone_number, '+14155553001');
  const other = await queue(kept.phone_number, '+14155553002');
  t.equal(await channelsUsed(env, org.organization_id), 4, 'two bridge calls hold four channels');
  t.equal((await env.request('DELETE', `/v1/caller-ids/${removed.id}`, { key: org.api_key })).status, 204);
  const c = (await env.request('GET', `/v1/calls/${id}`, { key: org.api_key })).body.data;
  neverDialed(t, c);
  t.equal((await env.request('GET', `/v1/calls/${other}`, { key: org.api_key })).body.data.status, 'QUEUED', 'the other caller ID\'s call stays');
  t.equal(await channelsUsed(env, org.organization_id), 2, 'the canceled call\'s channels are free');
});

t.test('origination re-checks the caller ID: a removed one ends the call undialed, a verified one goes out', async (t) => {
  const lostCall = await queue(lost.phone_number, '+14155553003');
  // The removal committed but its cancellations never ran.
  await env.db.none('UPDATE caller_ids SET removed_at = now() WHERE id = $1', [lost.id]);
  const keptCall = (await env.db.one(`SELECT id FROM calls WHERE from_number = $1 AND status = 'QUEUED'`, [kept.phone_number])).id;
  const workers = env.spawn('workers');
  await workers.ready();
  neverDialed(t, await settled(env, org, lostCall, 90_000));
  const ok = await settled(env, org, keptCall, 90_000);
  t.equal(ok.status, 'COMPLETED', 'the verified caller ID\'s call went out');
  t.equal(ok.from_number, kept.phone_number);
});
