// A process whose stdout reader went away (the supervisor was killed, `| head` ended) must still stop on SIGTERM:
// its log writes fail with EPIPE and must not keep it from exiting.
import t from 'tap';
import { testEnv } from '../helpers/env.ts';
import { running } from '../helpers/process-tree.ts';
import { eventually } from '../helpers/env.ts';

t.test('media stops on SIGTERM although nobody reads its logs any more', async (t) => {
  const te = await testEnv(t, { gateway: false });
  const media = te.spawn('media', { MEDIA_WORKERS: '1' });
  await media.ready(60_000);
  const pid = media.child.pid!;
  media.child.stdout!.destroy();
  media.child.stderr!.destroy();
  process.kill(pid, 'SIGTERM');
  const exited = await eventually(async () => !running(pid), 30_000, 100).catch(() => false);
  t.ok(exited, 'the process exited');
  if (!exited) media.child.kill('SIGKILL');
});
