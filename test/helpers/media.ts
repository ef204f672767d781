// A media process for tests that call through it: spawned on the test's environment, its control URL, and a control
// client (closed at teardown) to read its sessions and counters.
import { MediaControlClient } from '../../shared/media/control-client.ts';
import { DEV_CONTROL_SECRET } from '../../shared/media/settings.ts';
import type { TestEnv } from './env.ts';

export async function startMedia(t: { teardown(fn: () => unknown): void }, env: TestEnv, extra: Record<string, string> = {}) {
  const media = env.spawn('media', { MEDIA_WORKERS: '1', MEDIA_HEARTBEAT_MS: '500', ...extra });
  await media.ready(60_000);
  const controlUrl = /"control":"(http:[^"]+)"/.exec(media.output)![1];
  const client = new MediaControlClient({ url: controlUrl, secret: DEV_CONTROL_SECRET });
  t.teardown(() => client.close());
  return { media, controlUrl, client };
}
