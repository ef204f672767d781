// Bundles the browser SDK (sdk/) with esbuild into dist/sdk/: sdk.js (minified, with its source map) plus the
// softphone page and its stylesheet, copied as they are (the gateway fills the page's placeholders when it serves it).
// Runs from `npm install` (prepare) and, when the bundle is missing or older than its sources, from the gateway.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const SDK_SOURCE_DIR = join(ROOT, 'sdk');
export const SDK_DIST_DIR = join(ROOT, 'dist', 'sdk');
/** The files the gateway serves, by name inside SDK_DIST_DIR. */
export const SDK_FILES = ['softphone.html', 'softphone.css', 'sdk.js', 'sdk.js.map'] as const;

export async function buildSdk(outDir = SDK_DIST_DIR): Promise<void> {
  const result = await build({
    entryPoints: [join(SDK_SOURCE_DIR, 'index.ts')],
    bundle: true,
    format: 'iife',
    globalName: 'Openline',
    platform: 'browser',
    target: ['chrome100', 'firefox100', 'safari15'],
    minify: true,
    sourcemap: 'linked',
    outfile: join(outDir, 'sdk.js'),
    write: false,
    logLevel: 'silent',
    // mediasoup-client's debug logging reads process.env in Node only.
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  await mkdir(outDir, { recursive: true });
  const files = new Map<string, Uint8Array>(result.outputFiles.map((f) => [f.path, f.contents]));
  for (const name of ['softphone.html', 'softphone.css']) files.set(join(outDir, name), await readFile(join(SDK_SOURCE_DIR, name)));
  // Each file lands whole (write aside, then rename): a gateway starting meanwhile never reads half a bundle.
  for (const [path, bytes] of files) {
    const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(tmp, bytes);
    await rename(tmp, path);
  }
}

/** True when a served file is missing or any source under sdk/ is newer than the bundle. */
export async function sdkIsStale(outDir = SDK_DIST_DIR): Promise<boolean> {
  let built = Infinity;
  for (const name of SDK_FILES) {
    const s = await stat(join(outDir, name)).catch(() => null);
    if (!s) return true;
    built = Math.min(built, s.mtimeMs);
  }
  const sources = await readdir(SDK_SOURCE_DIR).catch(() => [] as string[]);
  for (const name of sources) {
    if ((await stat(join(SDK_SOURCE_DIR, name))).mtimeMs > built) return true;
  }
  return false;
}

/** Builds the bundle when it is missing or stale; returns whether it built. */
export async function ensureSdkBuilt(outDir = SDK_DIST_DIR): Promise<boolean> {
  if (!(await sdkIsStale(outDir))) return false;
  await buildSdk(outDir);
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  await buildSdk();
  console.log(`sdk: built ${SDK_DIST_DIR} in ${Math.round(performance.now() - started)} ms`);
}
