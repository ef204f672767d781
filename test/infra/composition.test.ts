// The four composition roots (<proc>/start.ts) run in this one Node process on a fresh database and Redis prefix:
// a call placed through the API completes (gateway -> workers -> sandbox carrier), and stopping the four leaves
// nothing open: no Redis connection of theirs (CLIENT LIST, by the prefix every connection of theirs is named
// with), none of their PostgreSQL connections (pg_stat_activity), and the process's active handles back to what
// they were before the start.
import t from 'tap';
import { startGateway } from '../../gateway/start.ts';
import { startMedia } from '../../media/start.ts';
import { startSignaling } from '../../signaling/start.ts';
import { startWorkers } from '../../workers/start.ts';
import { createLogger } from '../../shared/log.ts';
import type { RunningProcess } from '../../shared/process.ts';
import { callOrg, dial, settled } from '../calls/helpers.ts';
import { eventually, httpCall, testEnv } from '../helpers/env.ts';

const env = await testEnv(t, {
  gateway: false,
  env: { SANDBOX_TIME_SCALE: '0.01', WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: '0.01', MEDIA_WORKERS: '1' },
});
const log = createLogger('composition', 'warn');
const prefix = env.config.redisPrefix;

/** Redis connections named for this file's prefix (every connection createServices opens, and their duplicates). */
async function ourRedisClients(): Promise<string[]> {
  const list = (await env.redis.client('LIST')) as string;
  return list.split('\n').map((l) => /\bname=(\S*)/.exec(l)?.[1] ?? '').filter((n) => n.startsWith(`${prefix}:`));
}

/** PostgreSQL connections of the four processes to this file's database (application_name openline-<proc>). */
async function ourPgConnections(): Promise<string[]> {
  const rows = await env.db.any<{ application_name: string }>(
    `SELECT application_name FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'openline-%'`);
  return rows.map((r) => r.application_name);
}

/** Active handles by kind (timers are left out: libraries' unref'd timers come and go on their own). The test's
 *  own pool closes idle connections on its own, so counts are compared as "not above the baseline". */
function handles(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) if (r !== 'Timeout' && r !== 'Immediate') out[r] = (out[r] ?? 0) + 1;
  return out;
}

/** Kinds whose count went above the baseline. */
function above(baseline: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(handles()).filter(([k, n]) => n > (baseline[k] ?? 0)));
}

t.test('the four start functions run a call end to end, and stop leaves nothing open', async (t) => {
  // The test's own pool at its largest first (10 connections), so its sockets never exceed the baseline later.
  await Promise.all(Array.from({ length: 10 }, () => env.db.any('SELECT pg_sleep(0.05)')));
  const baseline = handles();
  t.same(await ourRedisClients(), [], 'no connection of ours before the start');

  const started: RunningProcess[] = [];
  const stopAll = async () => { for (const p of started.splice(0).reverse()) await p.stop(); };
  t.teardown(stopAll);
  const media = await startMedia(env.config, log);
  started.push(media);
  // Signaling drives this media process: its control URL is known once it listens (MEDIA_PORT 0).
  const controlUrl = String(media.info.control);
  started.push(await startSignaling({ ...env.config, media: { ...env.config.media, controlUrl } }, log));
  const workers = await startWorkers(env.config, log);
  started.push(workers);
  const gateway = await startGateway(env.config, log);
  started.push(gateway);
  for (const p of started) t.ok(p.info, 'each start function reports what its ready line logs');

  const health = await httpCall(String(workers.info.health).replace('/healthz', ''), 'GET', '/readyz');
  t.equal(health.status, 200, 'workers ready');
  const mediaReady = await httpCall(controlUrl, 'GET', '/readyz');
  t.equal(mediaReady.status, 200, 'media ready');

  // A bridge call through the API: the gateway queues it, the workers dial both sandbox legs, the call completes.
  env.gateway = gateway;
  const org = await callOrg(env);
  const r = await dial(env, org, '+14155554567');
  t.equal(r.status, 202, r.text);
  const call = await settled(env, org, r.body.data.call_id, 30_000);
  t.equal(call.status, 'COMPLETED', 'the call completed');
  env.gateway = null;

  const names = await ourRedisClients();
  t.ok(names.some((n) => n.endsWith(':openline-gateway')) && names.some((n) => n.endsWith(':openline-workers'))
    && names.some((n) => n.endsWith(':openline-signaling')), `the processes' Redis connections are named (${[...new Set(names)].join(', ')})`);
  t.ok(gateway.services.queues.opened.length > 0, `the gateway's queue registry opened ${gateway.services.queues.opened.join(', ')}`);

  await stopAll();
  t.throws(() => gateway.services.queues.get('calls-dial'), /queue registry closed/, 'the queue registry is closed');
  await eventually(async () => (await ourRedisClients()).length === 0, 10_000)
    .then(() => t.pass('every Redis connection of the four processes is closed'),
      async () => t.fail(`Redis connections left: ${(await ourRedisClients()).join(', ')}`));
  await eventually(async () => (await ourPgConnections()).length === 0, 10_000)
    .then(() => t.pass('every PostgreSQL connection of the four processes is closed'),
      async () => t.fail(`PostgreSQL connections left: ${(await ourPgConnections()).join(', ')}`));
  await eventually(async () => Object.keys(above(baseline)).length === 0, 10_000)
    .then(() => t.pass('no more active handles of any kind than before the start'),
      () => t.same(above(baseline), {}, `active handles above the baseline ${JSON.stringify(baseline)}`));
});
