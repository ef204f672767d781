// Where the mediasoup worker built by infra/mediasoup/build.ts lives: outside node_modules (so `npm ci`, which
// deletes node_modules, does not throw a 3-minute build away), keyed by mediasoup's version and our patch level.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MEDIASOUP_PACKAGE_DIR = fileURLToPath(new URL('../../node_modules/mediasoup/', import.meta.url));

export function mediasoupVersion(): string {
  return (JSON.parse(readFileSync(join(MEDIASOUP_PACKAGE_DIR, 'package.json'), 'utf8')) as { version: string }).version;
}

/** MEDIASOUP_WORKER_CACHE_DIR, else $XDG_CACHE_HOME/openline, else ~/.cache/openline. */
export function workerCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.MEDIASOUP_WORKER_CACHE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'openline');
}

/** Names the set of our patches to the worker (infra/mediasoup/patches.ts): change it whenever a patch changes, so a
 *  machine's cached worker built without it is not used. */
export const WORKER_PATCH_LEVEL = 'ol1';

export function cachedWorkerBinary(version = mediasoupVersion(), env: NodeJS.ProcessEnv = process.env): string {
  return join(workerCacheDir(env), `mediasoup-worker-${version}-${WORKER_PATCH_LEVEL}`);
}

/**
 * Sets MEDIASOUP_WORKER_BIN to the cached worker unless the environment already names one. mediasoup reads the
 * variable once, when its module loads: call this before the first `import('mediasoup')`.
 */
export function useCachedWorkerBinary(env: NodeJS.ProcessEnv = process.env): string {
  if (!env.MEDIASOUP_WORKER_BIN) {
    const binary = cachedWorkerBinary(mediasoupVersion(), env);
    if (!existsSync(binary)) {
      throw new Error(`no mediasoup worker at ${binary}: run \`npm run build:mediasoup\` (or npm ci) first`);
    }
    env.MEDIASOUP_WORKER_BIN = binary;
  }
  return env.MEDIASOUP_WORKER_BIN;
}
