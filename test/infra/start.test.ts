import { spawn } from 'node:child_process';
import t from 'tap';
import { dropDatabase } from '../../shared/db.ts';
import { randomToken } from '../../shared/ids.ts';
import { readProcfile } from '../../infra/start.ts';
import { eventually, httpCall, ROOT } from '../helpers/env.ts';

t.test('Procfile parsing', async (t) => {
  t.same(readProcfile('# c\ngateway: node a.ts\n\nworkers:  node --x b.ts\n'), [
    { name: 'gateway', command: 'node a.ts' }, { name: 'workers', command: 'node --x b.ts' },
  ]);
});

t.test('npm start runs every Procfile process, prints the URL and a first-run key, stops on SIGTERM', async (t) => {
  const id = randomToken(8).toLowerCase();
  const base = 20000 + Math.floor(Math.random() * 20000);
  const env = {
    ...process.env, DATABASE_URL: `postgres://127.0.0.1:5432/ol_start_${id}`, REDIS_PREFIX: `olt_start_${id}`,
    PORT: String(base), SIGNALING_PORT: String(base + 1), MEDIA_PORT: String(base + 2), WORKERS_PORT: String(base + 3),
  };
  t.teardown(() => dropDatabase(env.DATABASE_URL));
  const child = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  try {
    await eventually(async () => out.includes('gateway ready at'), 60_000, 100);
    const key = /API key \(shown once, store it now\): (olk_\S+)/.exec(out)?.[1];
    t.ok(key, 'first run prints a key');
    for (const proc of ['gateway', 'signaling', 'media', 'workers']) {
      await eventually(async () => new RegExp(`${proc}\\s+\\| .*"status":"ready"`).test(out), 30_000, 100);
    }
    t.pass('all four processes reported ready');
    const acct = await httpCall(`http://127.0.0.1:${base}`, 'GET', '/v1/account', { key });
    t.equal(acct.status, 200);
    t.equal(acct.body.data.organization.name, 'Demo');
    t.equal(acct.body.data.footprint.phone_numbers, 3);
    for (const p of [base + 1, base + 2, base + 3]) {
      const h = await httpCall(`http://127.0.0.1:${p}`, 'GET', '/healthz');
      t.equal(h.status, 200, `health endpoint on ${p}`);
    }
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
  }
  await exited;
  // npm itself exits on the signal at once; the supervisor and its children keep writing while they stop.
  await eventually(async () => /stopping all processes/.test(out), 15_000, 100);
  for (const proc of ['gateway', 'signaling', 'media', 'workers']) {
    await eventually(async () => new RegExp(`${proc}\\s+\\| .*"msg":"stopped"`).test(out), 15_000, 100)
      .catch(() => t.fail(`${proc} did not stop gracefully:\n${out}`));
  }
  t.pass('every process stopped gracefully');
});
