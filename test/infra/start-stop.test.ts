// `npm start` as a user runs it (npm 11 → the supervisor → four processes → mediasoup workers), stopped by real
// signals in each way a user or a service manager can send them, and a second copy started beside a running one.
import { createServer } from 'node:net';
import t from 'tap';
import { createDb, dropDatabase } from '../../shared/db.ts';
import { randomToken } from '../../shared/ids.ts';
import { createRedis } from '../../shared/redis.ts';
import { eventually, httpCall } from '../helpers/env.ts';
import type { TapTest } from '../helpers/pool.ts';
import { freePorts, killGroup, npmStartToExit, portFree, procStat, PROCS, running, startPlatform, type Platform } from '../helpers/process-tree.ts';

const id = randomToken(8).toLowerCase();
const DATABASE_URL = `postgres://127.0.0.1:5432/ol_stop_${id}`;
const REDIS_PREFIX = `olt_stop_${id}`;
t.teardown(async () => {
  await dropDatabase(DATABASE_URL);
  // The queues' keys the runs left (BullMQ's meta keys and the like).
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${REDIS_PREFIX}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
  await redis.quit();
});

/** This file's environment with fresh ports (one database for every run: only the first migrates). */
async function platformEnv(): Promise<{ env: NodeJS.ProcessEnv; ports: number[] }> {
  const ports = await freePorts(4);
  const [PORT, SIGNALING_PORT, MEDIA_PORT, WORKERS_PORT] = ports.map(String);
  const env = {
    ...process.env, DATABASE_URL, REDIS_PREFIX, PORT, SIGNALING_PORT, MEDIA_PORT, WORKERS_PORT,
    MEDIA_WORKERS: '1', DATABASE_POOL_MAX: '5',
  };
  return { env, ports };
}

async function databaseExists(url: string): Promise<boolean> {
  const admin = createDb('postgres://127.0.0.1:5432/postgres', 1);
  try {
    return Boolean(await admin.oneOrNone('SELECT 1 FROM pg_database WHERE datname = $1', [new URL(url).pathname.slice(1)]));
  } finally {
    await admin.$pool.end();
  }
}

/** Sends `signal` to `target`, then checks that every process of the tree exits, that the four processes (and,
 *  for a graceful stop, the supervisor) said so, and that no port stays held. */
async function expectAllStopped(t: TapTest, p: Platform, ports: number[], send: () => void, o: { graceful: boolean; why?: RegExp }) {
  const before = p.output().length;
  const pids = p.all();
  send();
  try {
    await eventually(async () => pids.every((pid) => !running(pid)), 40_000, 100);
    t.pass('npm, the supervisor, the four processes and the mediasoup worker all exited');
  } catch {
    const names = Object.entries(p.pids).flatMap(([name, v]) => (Array.isArray(v) ? v : [v]).map((pid) => [pid, name] as const));
    const left = pids.filter(running).map((pid) => `${new Map(names).get(pid)} ${pid} (ppid ${procStat(pid)?.ppid})`);
    t.fail(`still running: ${left.join(', ')}\n${p.output().slice(before)}`);
  } finally {
    killGroup(p.pids.npm);
  }
  if (o.graceful) {
    const after = p.output().slice(before);
    if (o.why) t.match(after, o.why, 'the supervisor says why it stops');
    for (const proc of PROCS) t.match(after, new RegExp(`${proc}\\s+\\| .*"msg":"stopped"`), `${proc} ran its shutdown`);
  }
  for (const port of ports) t.ok(await portFree(port), `port ${port} is free again`);
}

t.test('a second npm start beside a running one refuses at once, naming the port and its holder; SIGINT to npm then stops the first', async (t) => {
  const { env, ports } = await platformEnv();
  const p = await startPlatform(env);
  t.teardown(() => killGroup(p.pids.npm));
  const secondDb = `postgres://127.0.0.1:5432/ol_stop_second_${id}`;
  t.teardown(() => dropDatabase(secondDb));
  const started = Date.now();
  const second = await npmStartToExit({ ...env, DATABASE_URL: secondDb }, 30_000);
  t.not(second.code, 0, 'the second start exits non-zero');
  t.ok(Date.now() - started < 15_000, 'at once (no crash loop)');
  const lines = second.out.split('\n').filter((l) => l.startsWith('[start]'));
  if (!t.equal(lines.length, 1, 'it says so in one line')) t.comment(second.out);
  t.match(lines[0], `port ${env.PORT} (PORT) on 127.0.0.1 is in use by pid ${p.pids.gateway} (node --import tsx gateway/main.ts)`);
  t.notMatch(second.out, '"status":"ready"', 'nothing of the second copy started');
  t.equal(await databaseExists(secondDb), false, 'refused before touching the database');

  // The first copy still serves alone, with the same processes.
  for (const port of ports) {
    const h = await httpCall(`http://127.0.0.1:${port}`, 'GET', '/healthz');
    t.equal(h.status, 200, `the first copy still answers on ${port}`);
  }
  t.ok(p.all().every(running), 'every process of the first copy still runs');
  t.notMatch(p.output(), /exited \(code/, 'none of them was restarted');

  await expectAllStopped(t, p, ports, () => process.kill(p.pids.npm, 'SIGINT'), { graceful: true, why: /stopping all processes \(SIGINT\)/ });
});

t.test('a port held by other software: the refusal names that process', async (t) => {
  const { env, ports } = await platformEnv();
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(Number(env.SIGNALING_PORT), '127.0.0.1', r));
  t.teardown(() => new Promise((r) => holder.close(r)));
  const neverDb = `postgres://127.0.0.1:5432/ol_stop_never_${id}`;
  t.teardown(() => dropDatabase(neverDb));
  const res = await npmStartToExit({ ...env, DATABASE_URL: neverDb }, 30_000);
  t.not(res.code, 0);
  t.match(res.out, `[start] port ${env.SIGNALING_PORT} (SIGNALING_PORT) on 127.0.0.1 is in use by pid ${process.pid} (`);
  t.notMatch(res.out, '"status":"ready"');
});

t.test('SIGTERM to npm stops everything gracefully', async (t) => {
  const { env, ports } = await platformEnv();
  const p = await startPlatform(env);
  t.teardown(() => killGroup(p.pids.npm));
  t.equal(procStat(p.pids.supervisor)?.ppid, p.pids.npm, 'npm runs the supervisor itself (no shell in between)');
  await expectAllStopped(t, p, ports, () => process.kill(p.pids.npm, 'SIGTERM'), { graceful: true, why: /stopping all processes \(SIGTERM\)/ });
  t.equal(await p.exited, 0, 'npm exits 0 after a requested stop');
});

t.test('SIGTERM to the supervisor stops everything gracefully', async (t) => {
  const { env, ports } = await platformEnv();
  const p = await startPlatform(env);
  t.teardown(() => killGroup(p.pids.npm));
  await expectAllStopped(t, p, ports, () => process.kill(p.pids.supervisor, 'SIGTERM'), { graceful: true, why: /stopping all processes \(SIGTERM\)/ });
});

t.test('SIGINT to the whole group (Ctrl-C) stops everything gracefully', async (t) => {
  const { env, ports } = await platformEnv();
  const p = await startPlatform(env);
  t.teardown(() => killGroup(p.pids.npm));
  await expectAllStopped(t, p, ports, () => process.kill(-p.pids.npm, 'SIGINT'), { graceful: true, why: /stopping all processes \(SIGINT\)/ });
  t.notMatch(p.output(), /restarting in/, 'no process is restarted while stopping');
  t.equal(await p.exited, 0, 'npm exits 0');
});

t.test('npm killed (SIGKILL): the supervisor notices its parent is gone and stops everything', async (t) => {
  const { env, ports } = await platformEnv();
  const p = await startPlatform(env);
  t.teardown(() => killGroup(p.pids.npm));
  await expectAllStopped(t, p, ports, () => process.kill(p.pids.npm, 'SIGKILL'),
    { graceful: true, why: /stopping all processes \(the parent process exited\)/ });
});

t.test('the supervisor killed (SIGKILL): its processes notice and stop, leaving no port held', async (t) => {
  const { env, ports } = await platformEnv();
  const p = await startPlatform(env);
  t.teardown(() => killGroup(p.pids.npm));
  // Their log pipes went with the supervisor, so only their exit and the freed ports can be checked.
  await expectAllStopped(t, p, ports, () => process.kill(p.pids.supervisor, 'SIGKILL'), { graceful: false });
});
