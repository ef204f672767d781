// Builds the mediasoup worker (C++) against Debian's libraries and caches it outside node_modules, keyed by
// mediasoup's version, so `npm ci` on a clean clone takes seconds once a machine has built it once.
//
// Why not mediasoup's own install script: it runs pip for meson and ninja (PyPI is not reachable here) and its
// meson build downloads each library's source (GitHub is not reachable either). Instead:
//   - Debian's meson and ninja-build are used (meson 1.0.1; mediasoup 3.12.16 asks for >= 1.1.0 without using
//     anything newer, so the copy we build from has that line relaxed);
//   - every `subproject()` mediasoup calls finds a small stub folder (infra/mediasoup/subprojects/) that declares
//     the dependency variable mediasoup expects from Debian's system library;
//   - meson runs with --wrap-mode=nodownload, so nothing is fetched from anywhere;
//   - our patches to the worker (infra/mediasoup/patches.ts) are applied to the copy.
// Run by `npm install`/`npm ci` (package.json "postinstall"); does nothing when the cached binary exists.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachedWorkerBinary, mediasoupVersion, MEDIASOUP_PACKAGE_DIR } from '../../shared/media/worker-binary.ts';
import { applyWorkerPatches } from './patches.ts';

const STUBS_DIR = fileURLToPath(new URL('./subprojects/', import.meta.url));

/** Debian packages the build needs (also installed by .ci/run). */
export const DEBIAN_BUILD_PACKAGES = [
  'build-essential', 'pkg-config', 'meson', 'ninja-build', 'python3',
  'libuv1-dev', 'libssl-dev', 'libsrtp2-dev', 'libabsl-dev', 'libusrsctp-dev', 'nlohmann-json3-dev', 'catch2',
];
/** pkg-config modules the stubs resolve; a missing one means a missing -dev package. */
const PKG_CONFIG_MODULES = [
  'libuv', 'libssl', 'libcrypto', 'libsrtp2', 'usrsctp', 'nlohmann_json', 'catch2',
  'absl_flat_hash_map', 'absl_flat_hash_set', 'absl_inlined_vector', 'absl_btree', 'absl_strings', 'absl_optional',
];

const say = (line: string) => process.stdout.write(`[mediasoup-build] ${line}\n`);

function missingTools(): string[] {
  const missing: string[] = [];
  for (const tool of ['meson', 'ninja', 'pkg-config', 'make', 'c++', 'python3']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status !== 0) missing.push(tool);
  }
  if (!missing.includes('pkg-config')) {
    for (const mod of PKG_CONFIG_MODULES) {
      if (spawnSync('pkg-config', ['--exists', mod]).status !== 0) missing.push(`pkg-config module ${mod}`);
    }
  }
  return missing;
}

/** The `directory =` each of mediasoup's .wrap files names: meson uses a folder by that name instead of fetching. */
function wrapDirectories(workerDir: string): Map<string, string> {
  const dirs = new Map<string, string>();
  const subprojects = join(workerDir, 'subprojects');
  for (const file of readdirSync(subprojects).filter((f) => f.endsWith('.wrap'))) {
    const m = /^directory\s*=\s*(\S+)/m.exec(readFileSync(join(subprojects, file), 'utf8'));
    if (m) dirs.set(file.slice(0, -'.wrap'.length), m[1]);
  }
  return dirs;
}

/** Builds into a scratch copy of mediasoup's worker source and returns the path of the built executable. */
function build(version: string, scratch: string): string {
  rmSync(scratch, { recursive: true, force: true });
  const workerDir = join(scratch, 'worker');
  const sourceDir = join(MEDIASOUP_PACKAGE_DIR, 'worker');
  const outDirInSource = join(sourceDir, 'out'); // holds the link to the cached worker, not source
  cpSync(sourceDir, workerDir, { recursive: true, filter: (src) => src !== outDirInSource && !src.startsWith(`${outDirInSource}/`) });

  const dirs = wrapDirectories(workerDir);
  for (const stub of readdirSync(STUBS_DIR)) {
    const dir = dirs.get(stub);
    if (!dir) throw new Error(`mediasoup ${version} has no ${stub}.wrap: the stubs in infra/mediasoup/subprojects need a look`);
    cpSync(join(STUBS_DIR, stub), join(workerDir, 'subprojects', dir), { recursive: true });
  }
  const mesonBuild = join(workerDir, 'meson.build');
  writeFileSync(mesonBuild, readFileSync(mesonBuild, 'utf8').replace(/meson_version:\s*'>= 1\.1\.0'/, "meson_version: '>= 1.0.0'"));
  applyWorkerPatches(workerDir, say);

  // The Makefile keeps mediasoup's own Release preset; pointing MESON/NINJA at Debian's and giving it an existing
  // PIP_DIR skips its pip step.
  const pipDir = join(scratch, 'no-pip');
  mkdirSync(pipDir, { recursive: true });
  const outDir = join(scratch, 'out');
  const jobs = String(Math.max(1, cpus().length));
  const args = [
    '-C', workerDir, 'mediasoup-worker',
    'MESON=meson', 'NINJA=ninja', `PIP_DIR=${pipDir}`, `MEDIASOUP_OUT_DIR=${outDir}`, `CORES=${jobs}`,
    'MESON_ARGS=--wrap-mode=nodownload',
  ];
  say(`make ${args.join(' ')}`);
  const env = { ...process.env };
  delete env.MEDIASOUP_WORKER_BIN; // the Makefile skips compiling when it is set
  execFileSync('make', args, { stdio: 'inherit', env });
  const binary = join(outDir, 'Release', 'mediasoup-worker');
  if (!existsSync(binary)) throw new Error(`the build finished without ${binary}`);
  return binary;
}

/** Points mediasoup's default worker path at the cached binary, so `import('mediasoup')` works without env. */
function linkIntoPackage(binary: string): void {
  const target = join(MEDIASOUP_PACKAGE_DIR, 'worker', 'out', 'Release', 'mediasoup-worker');
  mkdirSync(dirname(target), { recursive: true });
  try {
    if (readlinkSync(target) === binary) return; // already linked: leave it, a running test may be spawning it
  } catch { /* absent, or not a link */ }
  rmSync(target, { force: true });
  symlinkSync(binary, target);
}

function main(): void {
  if (!existsSync(join(MEDIASOUP_PACKAGE_DIR, 'package.json'))) {
    say('mediasoup is not installed: nothing to build');
    return;
  }
  const version = mediasoupVersion();
  const binary = cachedWorkerBinary(version);
  if (existsSync(binary) && process.env.MEDIASOUP_REBUILD !== '1') {
    linkIntoPackage(binary);
    say(`using cached worker ${binary}`);
    return;
  }
  const missing = missingTools();
  if (missing.length) {
    process.stderr.write(
      `[mediasoup-build] cannot build the mediasoup ${version} worker, missing: ${missing.join(', ')}\n` +
      `[mediasoup-build] install Debian's build packages, then run npm ci again:\n` +
      `  apt-get install -y ${DEBIAN_BUILD_PACKAGES.join(' ')}\n`,
    );
    process.exit(1);
  }
  const started = Date.now();
  const scratch = `${binary}.build`;
  say(`building the mediasoup ${version} worker against Debian's libraries (a few minutes on 2 cores)`);
  const built = build(version, scratch);
  // Copy then rename, so a concurrent install never sees half a binary.
  const partial = `${binary}.partial-${process.pid}`;
  cpSync(built, partial);
  chmodSync(partial, 0o755);
  renameSync(partial, binary);
  rmSync(scratch, { recursive: true, force: true });
  linkIntoPackage(binary);
  say(`built ${binary} in ${Math.round((Date.now() - started) / 1000)} s`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
