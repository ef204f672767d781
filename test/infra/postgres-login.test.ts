// `npm start` against a PostgreSQL that runs but refuses the login: it must say what failed (missing role, wrong or
// missing password, missing database, missing privilege) and how to fix it, at once, not "PostgreSQL did not start".
import t from 'tap';
import { loadConfig } from '../../shared/config.ts';
import { randomToken } from '../../shared/ids.ts';
import { prepareDatabase } from '../../infra/prepare.ts';
import { ensureServices } from '../../infra/services.ts';
import { OwnPostgres } from '../helpers/own-stores.ts';
import { npmStartToExit } from '../helpers/process-tree.ts';

const id = randomToken(8).toLowerCase();

/** Runs `npm start` with DATABASE_URL (ports 0: nothing to check there) to its end; its [start] lines and exit code. */
async function start(databaseUrl: string): Promise<{ code: number | null; lines: string[]; out: string; ms: number }> {
  const env = { ...process.env, DATABASE_URL: databaseUrl, REDIS_PREFIX: `olt_login_${id}`, PORT: '0', SIGNALING_PORT: '0', MEDIA_PORT: '0', WORKERS_PORT: '0' };
  const run = await npmStartToExit(env, 60_000);
  return { ...run, lines: run.out.split('\n').filter((l) => l.startsWith('[start]')) };
}

/** The run failed at once with exactly one line, matching `expected`, and never claimed the server was down. */
function refusedWith(t: Tap, run: Awaited<ReturnType<typeof start>>, expected: string) {
  t.not(run.code, 0, 'npm start exits non-zero');
  if (!t.equal(run.lines.length, 1, 'one line')) t.comment(run.out);
  t.equal(run.lines[0], `[start] ${expected}`);
  t.notMatch(run.out, /did not start|starting PostgreSQL/, 'no attempt to start a server that runs');
  t.ok(run.ms < 30_000, `at once (${run.ms} ms)`);
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('a role that does not exist (the shared server trusts 127.0.0.1, so it says so)', async (t) => {
  const role = `ol_norole_${id}`;
  const run = await start(`postgres://${role}@127.0.0.1:5432/ol_login_${id}`);
  refusedWith(t, run, `PostgreSQL at 127.0.0.1:5432 has no role "${role}": create it with: sudo -u postgres createuser ` +
    `--createdb --pwprompt ${role}, then set DATABASE_URL=postgres://${role}:<password>@127.0.0.1:5432/ol_login_${id} (or name an existing role there).`);
});

t.test('a server with password authentication', async (t) => {
  const pg = await OwnPostgres.create(t, { password: true });
  const role = `ol_pw_${id}`;
  const host = `127.0.0.1:${pg.port}`;
  await pg.sql(`CREATE ROLE ${role} LOGIN PASSWORD 'right-one'`);

  await t.test('a wrong password', async (t) => {
    const run = await start(`postgres://${role}:wrong@${host}/app`);
    refusedWith(t, run, `PostgreSQL at ${host} refused the password of role "${role}" (a wrong password, or no such role): ` +
      `fix DATABASE_URL=postgres://${role}:<password>@${host}/app, or set the role's password: ` +
      `sudo -u postgres psql -c "ALTER ROLE \\"${role}\\" PASSWORD '<password>'".`);
  });

  await t.test('no password in DATABASE_URL', async (t) => {
    const run = await start(`postgres://${role}@${host}/app`);
    refusedWith(t, run, `PostgreSQL at ${host} asks role "${role}" for a password and neither DATABASE_URL nor PGPASSWORD gives one: ` +
      `set DATABASE_URL=postgres://${role}:<password>@${host}/app (or PGPASSWORD).`);
  });

  await t.test('the right password, but the role may not create the missing database', async (t) => {
    const run = await start(`postgres://${role}:right-one@${host}/app`);
    refusedWith(t, run, `role "${role}" lacks a privilege on PostgreSQL at ${host} (permission denied to create database): ` +
      `create the database for it once with sudo -u postgres createdb -O ${role} app, or let it create databases: ` +
      `sudo -u postgres psql -c "ALTER ROLE \\"${role}\\" CREATEDB".`);
  });

  await t.test('with CREATEDB, and the password in PGPASSWORD (as the README says), the database is created', async (t) => {
    await pg.sql(`ALTER ROLE ${role} CREATEDB`);
    const config = loadConfig({ ...process.env, DATABASE_URL: `postgres://${role}@${host}/app` });
    process.env.PGPASSWORD = 'right-one';
    try {
      await ensureServices(config, () => undefined);
      const prep = await prepareDatabase(config);
      t.equal(prep.created, true);
      t.ok(prep.applied.length > 0, 'migrations applied');
    } finally {
      delete process.env.PGPASSWORD;
    }
  });

  await t.test('the maintenance database is missing', async (t) => {
    await pg.sql('DROP DATABASE postgres', 'template1');
    const run = await start(`postgres://${role}:right-one@${host}/app`);
    refusedWith(t, run, `PostgreSQL at ${host} has no database "postgres": create it with: sudo -u postgres createdb postgres.`);
  });
});
