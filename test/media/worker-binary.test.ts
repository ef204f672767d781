// The install step's product: the mediasoup worker built against Debian's libraries, cached outside node_modules,
// runs for `import('mediasoup')` both through MEDIASOUP_WORKER_BIN and through mediasoup's default path.
import { execFile } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { cachedWorkerBinary, MEDIASOUP_PACKAGE_DIR, mediasoupVersion } from '../../shared/media/worker-binary.ts';
import { ROOT } from '../helpers/env.ts';

const run = promisify(execFile);
const SCRIPT = `import('mediasoup').then(async (m) => {
  const w = await m.createWorker({ logLevel: 'warn' });
  const r = await w.createRouter({ mediaCodecs: [{ kind: 'audio', mimeType: 'audio/PCMU', clockRate: 8000 }] });
  const usage = await w.getResourceUsage();
  console.log(JSON.stringify({ version: m.version, pid: w.pid, router: r.id, usage: typeof usage.ru_utime }));
  w.close();
})`;

t.test('the cached worker is there, keyed by version', async (t) => {
  t.equal(mediasoupVersion(), '3.12.16');
  const binary = cachedWorkerBinary();
  t.match(binary, /mediasoup-worker-3\.12\.16-ol\d+$/);
  t.ok(existsSync(binary), `${binary} exists`);
  t.notOk(binary.startsWith(join(ROOT, 'node_modules')), 'outside node_modules');
});

t.test('import("mediasoup") runs the cached worker via MEDIASOUP_WORKER_BIN', async (t) => {
  const { stdout } = await run(process.execPath, ['-e', SCRIPT], { cwd: ROOT, env: { ...process.env, MEDIASOUP_WORKER_BIN: cachedWorkerBinary() } });
  const out = JSON.parse(stdout);
  t.equal(out.version, '3.12.16');
  t.ok(out.pid > 0 && out.router, 'a worker started and made a router');
  t.equal(out.usage, 'number');
});

t.test('and through mediasoup\'s default path, which the install step links to it', async (t) => {
  const linked = join(MEDIASOUP_PACKAGE_DIR, 'worker', 'out', 'Release', 'mediasoup-worker');
  t.equal(realpathSync(linked), realpathSync(cachedWorkerBinary()));
  const env = { ...process.env };
  delete env.MEDIASOUP_WORKER_BIN;
  const { stdout } = await run(process.execPath, ['-e', SCRIPT], { cwd: ROOT, env });
  t.equal(JSON.parse(stdout).version, '3.12.16');
});

t.test('the install step does nothing when the cached worker exists', async (t) => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'infra/mediasoup/build.ts'], { cwd: ROOT });
  t.match(stdout, /using cached worker .*mediasoup-worker-3\.12\.16-ol\d+/);
});
