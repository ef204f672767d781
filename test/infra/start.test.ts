import { spawn } from 'node:child_process';
import { freePorts } from '../helpers/ports.ts';
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
  const [base, signalingPort, mediaPort, workersPort, metricsPort] = await freePorts(5);
  const env = {
    ...process.env, DATABASE_URL: `postgres://127.0.0.1:5432/ol_start_${id}`, REDIS_PREFIX: `olt_start_${id}`,
    PORT: String(base), SIGNALING_PORT: String(signalingPort), MEDIA_PORT: String(mediaPort), WORKERS_PORT: String(workersPort),
    METRICS_PORT: String(metricsPort),
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
    t.match(out, `[start] gateway ready at http://127.0.0.1:${base}  (try:`);
    t.match(out, `[start] PUBLIC_URL is unset: links and WWW-Authenticate name http://127.0.0.1:${base}; set it`,
      'says which base URL links use when PUBLIC_URL is unset');
    for (const proc of ['gateway', 'signaling', 'media', 'workers']) {
      await eventually(async () => new RegExp(`${proc}\\s+\\| .*"status":"ready"`).test(out), 30_000, 100);
    }
    t.pass('all four processes reported ready');
    const acct = await httpCall(`http://127.0.0.1:${base}`, 'GET', '/v1/account', { key });
    t.equal(acct.status, 200);
    t.equal(acct.body.data.organization.name, 'Sandbox', 'the first organization is named for what it is');
    t.match(out, 'it is a normal key with every scope (not a demo key)');
    t.equal(acct.body.data.footprint.phone_numbers, 3);
    for (const p of [signalingPort, mediaPort, workersPort]) {
      const h = await httpCall(`http://127.0.0.1:${p}`, 'GET', '/healthz');
      t.equal(h.status, 200, `health endpoint on ${p}`);
    }
  } catch (err) {
    t.fail(`npm start did not come up: ${(err as Error).message}\n${out}`);
  } finally {
    try { process.kill(-child.pid!, 'SIGTERM'); } catch { /* the supervisor already exited */ }
  }
  await exited;
  // npm exits once the supervisor has stopped everything (it forwards the signal and waits).
  await eventually(async () => /stopping all processes/.test(out), 15_000, 100);
  for (const proc of ['gateway', 'signaling', 'media', 'workers']) {
    await eventually(async () => new RegExp(`${proc}\\s+\\| .*"msg":"stopped"`).test(out), 15_000, 100)
      .catch(() => t.fail(`${proc} did not stop gracefully:\n${out}`));
  }
  t.pass('every process stopped gracefully');

  // A second run creates nothing and says which organization exists and how to make a key for it.
  const org = /organization_id: (\S+)/.exec(out)?.[1];
  const again = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out2 = '';
  again.stdout.on('data', (d) => { out2 += d; });
  again.stderr.on('data', (d) => { out2 += d; });
  const exited2 = new Promise<number | null>((r) => again.once('exit', (c) => r(c)));
  try {
    await eventually(async () => out2.includes('a new API key:'), 60_000, 100);
    t.match(out2, new RegExp(`Sandbox  id ${org}  \\(3 active numbers\\)`), 'the second run lists the organization');
    t.match(out2, `a new API key: npm run --silent admin -- key create --org ${org}`, 'and how to make a key for it');
    t.notMatch(out2, 'API key (shown once', 'no second organization or key');
  } finally {
    try { process.kill(-again.pid!, 'SIGTERM'); } catch { /* already gone */ }
  }
  await exited2;
  await eventually(async () => /stopping all processes/.test(out2), 15_000, 100).catch(() => undefined);
});
