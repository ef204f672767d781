// The gateway and signaling bind their ports exclusively: uWebSockets.js's default SO_REUSEPORT let a second copy
// bind the same (explicitly chosen) port and silently share its traffic; two npm starts in the same instant pass
// the supervisor's port check together.
import t from 'tap';
import { httpCall, testEnv } from '../helpers/env.ts';
import { freePort } from '../helpers/ports.ts';

const env = await testEnv(t, { gateway: false });

/** How a second copy ends up: it exits (refused), or says ready (it shares the port: the bug). */
async function outcome(p: ReturnType<typeof env.spawn>): Promise<'exited' | 'ready'> {
  const r = await Promise.race([p.exited.then(() => 'exited' as const), p.ready(60_000).then(() => 'ready' as const, () => 'exited' as const)]);
  if (r === 'ready') p.child.kill('SIGKILL');
  return r;
}

t.test('a second gateway on the port of a running one fails to start; the first keeps serving', async (t) => {
  const port = String(await freePort());
  const first = env.spawn('gateway', { PORT: port });
  await first.ready();
  const second = env.spawn('gateway', { PORT: port });
  t.equal(await outcome(second), 'exited', 'the second gateway does not start');
  t.not(await second.exited, 0, 'it exits with an error');
  t.match(second.output, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}`), 'saying the port is in use');
  t.notMatch(second.output, /"status":"ready"/, 'it never said ready');
  t.equal((await httpCall(`http://127.0.0.1:${port}`, 'GET', '/healthz')).status, 200, 'the first still answers');
});

t.test('a second signaling process on the port of a running one fails to start', async (t) => {
  const port = String(await freePort());
  const first = env.spawn('signaling', { SIGNALING_PORT: port, SIGNALING_MEDIA: 'off' });
  await first.ready();
  const second = env.spawn('signaling', { SIGNALING_PORT: port, SIGNALING_MEDIA: 'off' });
  t.equal(await outcome(second), 'exited', 'the second signaling process does not start');
  t.not(await second.exited, 0, 'it exits with an error');
  t.match(second.output, /cannot listen on/);
  t.notMatch(second.output, /"status":"ready"/, 'it never said ready');
  t.equal(first.child.exitCode, null, 'the first keeps running');
});
