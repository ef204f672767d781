// `npm start`: make sure PostgreSQL and Redis are up, create and migrate the database, create a sandbox
// organization on first run, then run every Procfile process and keep them running.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bootstrapOrganization } from '../shared/accounts/bootstrap.ts';
import { listenUrl } from '../gateway/http/public-url.ts';
import { loadConfig } from '../shared/config.ts';
import { createDb } from '../shared/db.ts';
import { DEFAULT_ALL_SCOPES } from '../shared/scopes.ts';
import { randomBytes } from 'node:crypto';
import { hashPassword } from '../shared/users/passwords.ts';
import { prepareDatabase } from './prepare.ts';
import { assertPortsFree } from './ports.ts';
import { ensureServices } from './services.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const say = (line: string) => process.stdout.write(`[start] ${line}\n`);
/** The organization `npm start` creates on an empty database. */
export const SANDBOX_ORG = 'Sandbox';

interface Entry { name: string; command: string; child: ChildProcess | null; restarts: number[] }

/** Procfile lines `name: command`. */
export function readProcfile(text: string): { name: string; command: string }[] {
  return text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')).map((l) => {
    const i = l.indexOf(':');
    return { name: l.slice(0, i).trim(), command: l.slice(i + 1).trim() };
  });
}

/** First run: a sandbox organization and its key. Later runs: which organizations exist and how to get a key
 *  (the first key was shown once and is not stored in plain text anywhere). */
async function firstRun(): Promise<void> {
  const config = loadConfig();
  const db = createDb(config.databaseUrl, 2, 'openline-start');
  try {
    const orgs = await db.any<{ id: string; name: string; numbers: number }>(
      `SELECT o.id, o.name, (SELECT count(*)::int FROM phone_numbers p WHERE p.organization_id = o.id AND p.status = 'ACTIVE') AS numbers
         FROM organizations o ORDER BY o.created_at LIMIT 6`);
    if (orgs.length > 0) {
      say(`organizations in ${new URL(config.databaseUrl).pathname.slice(1)}:`);
      for (const o of orgs.slice(0, 5)) say(`  ${o.name}  id ${o.id}  (${o.numbers} active numbers)`);
      if (orgs.length > 5) say('  ...');
      say(`a new API key: npm run --silent admin -- key create --org ${orgs[0].id} --owner   (admin --help lists every command)`);
      return;
    }
    const org = await bootstrapOrganization(db, { org: SANDBOX_ORG, scopes: [...DEFAULT_ALL_SCOPES], numbers: 3 });
    say(`first run: created the organization "${SANDBOX_ORG}" with 3 numbers on the sandbox carrier (no real calls are placed)`);
    say(`  organization_id: ${org.organization_id}`);
    say(`  API key (shown once, store it now): ${org.api_key}`);
    say('  it is a normal key with every scope (not a demo key); its numbers and calls live on the sandbox carrier');
    say(`  numbers: ${org.phone_numbers.join(', ')}`);
    // The owner signs in to the console with a generated password, printed this once (only its scrypt hash is kept).
    const password = randomBytes(12).toString('base64url');
    const owner = await db.one<{ email: string }>('UPDATE users SET password_hash = $1 WHERE id = $2 RETURNING email', [await hashPassword(password), org.user_id]);
    const url = config.publicUrl ?? listenUrl(config.host, config.port);
    say(`  console: ${url}/console/  sign in as ${owner.email} with the password ${password} (shown once)`);
  } finally {
    await db.$pool.end();
  }
}

/** How long a process may take to stop after SIGTERM before it is killed (each process's own limit is 10 s). */
const STOP_GRACE_MS = 12_000;

/** Runs the Procfile's processes, restarts a crashed one with back-off, and stops them all once: SIGTERM to each,
 *  SIGKILL to any still running after STOP_GRACE_MS, then exits. */
class Supervisor {
  private readonly entries: Entry[];
  private readonly width: number;
  private stopping = false;

  constructor(procs: { name: string; command: string }[], private readonly onLine: (e: Entry, line: string) => void) {
    this.entries = procs.map((p) => ({ ...p, child: null, restarts: [] }));
    this.width = Math.max(...this.entries.map((e) => e.name.length));
  }

  startAll(): void {
    for (const e of this.entries) this.launch(e);
  }

  private launch(e: Entry): void {
    if (this.stopping) return;
    // The IPC channel is the children's tie to this process: when it closes (this process died, even by SIGKILL),
    // each child stops itself (shared/process.ts), so none is left serving without a supervisor.
    const child = spawn('sh', ['-c', `exec ${e.command}`], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    e.child = child;
    const prefix = `${e.name.padEnd(this.width)} | `;
    const pipe = (stream: NodeJS.ReadableStream, out: NodeJS.WriteStream) => {
      let buf = '';
      stream.on('data', (d: Buffer) => {
        buf += d.toString();
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          out.write(prefix + line + '\n');
          this.onLine(e, line);
        }
      });
    };
    pipe(child.stdout!, process.stdout);
    pipe(child.stderr!, process.stderr);
    child.on('exit', (code, signal) => {
      e.child = null;
      if (this.stopping) return;
      // Restart a crashed process, backing off; give up when it crashes 5 times within a minute.
      const now = Date.now();
      e.restarts = e.restarts.filter((t) => now - t < 60_000);
      if (e.restarts.length >= 5) {
        say(`${e.name} keeps exiting (code ${code ?? signal}); stopping everything`);
        void this.stop(1, 'a process keeps exiting');
        return;
      }
      e.restarts.push(now);
      const delay = 500 * 2 ** (e.restarts.length - 1);
      say(`${e.name} exited (code ${code ?? signal}); restarting in ${delay} ms`);
      setTimeout(() => this.launch(e), delay);
    });
  }

  /** Stops every process and exits; later calls (a second signal, npm forwarding the group's) change nothing. */
  async stop(code: number, why: string): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const alive = this.entries.filter((e) => e.child);
    if (alive.length) say(`stopping all processes (${why})`);
    for (const e of alive) e.child!.kill('SIGTERM');
    await Promise.race([
      Promise.all(alive.map((e) => new Promise((r) => (e.child ? e.child.once('exit', r) : r(null))))),
      new Promise((r) => setTimeout(r, STOP_GRACE_MS)),
    ]);
    for (const e of this.entries) {
      if (e.child) say(`${e.name} did not stop within ${STOP_GRACE_MS / 1000} s; killing it`);
      e.child?.kill('SIGKILL');
    }
    process.exit(code);
  }
}

/** Calls `onGone` once this process's parent has died (it is then re-parented, so its parent pid changes): a
 *  supervisor whose `npm start` was killed must not keep the platform running with no one to stop it. */
function watchParent(onGone: () => void): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, 500);
  timer.unref();
}

async function main(): Promise<void> {
  const config = loadConfig();
  let gatewayAnnounced = false;
  const supervisor = new Supervisor(readProcfile(readFileSync(`${ROOT}Procfile`, 'utf8')), (e, line) => {
    if (e.name === 'gateway' && line.includes('"status":"ready"') && !gatewayAnnounced) {
      gatewayAnnounced = true;
      const url = listenUrl(config.host, config.port);
      say(`gateway ready at ${url}  (try: curl -H "Authorization: Bearer <key>" ${url}/v1/account)`);
      if (!config.publicUrl) say(`PUBLIC_URL is unset: links and WWW-Authenticate name ${url}; set it to the URL clients use`);
    }
  });
  // From the first moment: npm 11 forwards SIGINT and SIGTERM to its script's process (which is this one: the
  // start script execs node); a terminal that closes sends SIGHUP. Before any child runs, stopping is just exiting.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void supervisor.stop(0, signal));
  watchParent(() => void supervisor.stop(0, 'the parent process exited'));
  // Broken pipes (a log reader that went away) must not crash the supervisor and orphan its children.
  for (const out of [process.stdout, process.stderr]) out.on('error', () => undefined);

  await assertPortsFree(config);
  await ensureServices(config, say);
  const prep = await prepareDatabase(config);
  if (prep.created) say(`created database ${new URL(config.databaseUrl).pathname.slice(1)}`);
  if (prep.applied.length) say(`applied migrations: ${prep.applied.join(', ')}`);
  await firstRun();
  supervisor.startAll();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err) => {
    process.stderr.write(`[start] ${(err as Error).message}\n`);
    process.exit(1);
  });
}
