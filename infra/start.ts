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
import { prepareDatabase } from './prepare.ts';
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
      say(`a new API key: npm run --silent admin -- key create --org ${orgs[0].id}   (admin --help lists every command)`);
      return;
    }
    const org = await bootstrapOrganization(db, { org: SANDBOX_ORG, scopes: [...DEFAULT_ALL_SCOPES], numbers: 3 });
    say(`first run: created the organization "${SANDBOX_ORG}" with 3 numbers on the sandbox carrier (no real calls are placed)`);
    say(`  organization_id: ${org.organization_id}`);
    say(`  API key (shown once, store it now): ${org.api_key}`);
    say('  it is a normal key with every scope (not a demo key); its numbers and calls live on the sandbox carrier');
    say(`  numbers: ${org.phone_numbers.join(', ')}`);
  } finally {
    await db.$pool.end();
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  await ensureServices(config, say);
  const prep = await prepareDatabase(config);
  if (prep.created) say(`created database ${new URL(config.databaseUrl).pathname.slice(1)}`);
  if (prep.applied.length) say(`applied migrations: ${prep.applied.join(', ')}`);
  await firstRun();

  const entries: Entry[] = readProcfile(readFileSync(`${ROOT}Procfile`, 'utf8')).map((p) => ({ ...p, child: null, restarts: [] }));
  let stopping = false;
  const width = Math.max(...entries.map((e) => e.name.length));

  const launch = (e: Entry) => {
    const child = spawn('sh', ['-c', `exec ${e.command}`], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    e.child = child;
    const prefix = `${e.name.padEnd(width)} | `;
    let announced = false;
    const pipe = (stream: NodeJS.ReadableStream, out: NodeJS.WriteStream) => {
      let buf = '';
      stream.on('data', (d: Buffer) => {
        buf += d.toString();
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          out.write(prefix + line + '\n');
          if (!announced && e.name === 'gateway' && line.includes('"status":"ready"')) {
            announced = true;
            const url = listenUrl(config.host, config.port);
            say(`gateway ready at ${url}  (try: curl -H "Authorization: Bearer <key>" ${url}/v1/account)`);
            if (!config.publicUrl) say(`PUBLIC_URL is unset: links and WWW-Authenticate name ${url}; set it to the URL clients use`);
          }
        }
      });
    };
    pipe(child.stdout!, process.stdout);
    pipe(child.stderr!, process.stderr);
    child.on('exit', (code, signal) => {
      e.child = null;
      if (stopping) return;
      // Restart a crashed process, backing off; give up when it crashes 5 times within a minute.
      const now = Date.now();
      e.restarts = e.restarts.filter((t) => now - t < 60_000);
      if (e.restarts.length >= 5) {
        say(`${e.name} keeps exiting (code ${code ?? signal}); stopping everything`);
        void shutdown(1);
        return;
      }
      e.restarts.push(now);
      const delay = 500 * 2 ** (e.restarts.length - 1);
      say(`${e.name} exited (code ${code ?? signal}); restarting in ${delay} ms`);
      setTimeout(() => { if (!stopping) launch(e); }, delay);
    });
  };

  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('stopping all processes');
    const alive = entries.filter((e) => e.child);
    for (const e of alive) e.child!.kill('SIGTERM');
    await Promise.race([
      Promise.all(alive.map((e) => new Promise((r) => (e.child ? e.child.once('exit', r) : r(null))))),
      new Promise((r) => setTimeout(r, 12_000)),
    ]);
    for (const e of entries) e.child?.kill('SIGKILL');
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  for (const e of entries) launch(e);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err) => {
    process.stderr.write(`[start] ${(err as Error).message}\n`);
    process.exit(1);
  });
}
