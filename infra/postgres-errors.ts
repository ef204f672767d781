// What a failed PostgreSQL login or setup means, in one line with its fix: a server that runs but refuses the login
// must not be reported as a server that did not start.
import { databaseName, databaseUser } from '../shared/db.ts';

/** One line saying what failed and how to fix it, for errors a running server gives (authentication, a missing role
 *  or database, a missing privilege) and an unknown host; null for anything else. */
export function postgresProblem(err: unknown, url: string): string | null {
  const { code, message = '' } = err as { code?: string; message?: string };
  const u = new URL(url);
  const user = databaseUser(url);
  const db = databaseName(url) || 'openline';
  const at = `PostgreSQL at ${u.host || 'the local socket'}`;
  const why = u.username ? '' : ` (DATABASE_URL names no user, so PGUSER or the OS user is used)`;
  const withPassword = `DATABASE_URL=postgres://${user}:<password>@${u.host}/${db}`;
  // node-postgres raises this itself when the server asks for a password the URL does not give.
  if (/password must be a string/i.test(message)) {
    return `${at} asks role "${user}" for a password and neither DATABASE_URL nor PGPASSWORD gives one${why}: ` +
      `set ${withPassword} (or PGPASSWORD).`;
  }
  if (code === '28P01') {
    return `${at} refused the password of role "${user}" (a wrong password, or no such role)${why}: fix ${withPassword}, ` +
      `or set the role's password: sudo -u postgres psql -c "ALTER ROLE \\"${user}\\" PASSWORD '<password>'".`;
  }
  if (code === '28000' && /role .* does not exist/.test(message)) {
    return `${at} has no role "${user}"${why}: create it with: sudo -u postgres createuser --createdb --pwprompt ${user}, ` +
      `then set ${withPassword} (or name an existing role there).`;
  }
  if (code === '28000' && /pg_hba\.conf/.test(message)) {
    return `${at} does not let role "${user}" log in from here (${message}): add a line for it to pg_hba.conf and reload PostgreSQL.`;
  }
  if (code === '28000') return `${at} refused the login of role "${user}" (${message}).`;
  if (code === '3D000') {
    const missing = /database "([^"]+)"/.exec(message)?.[1] ?? db;
    // "postgres" is the maintenance database every server has (npm start connects to it to create its own).
    const owner = missing === 'postgres' ? '' : ` -O ${user}`;
    return `${at} has no database "${missing}": create it with: sudo -u postgres createdb${owner} ${missing}.`;
  }
  if (code === '42501') {
    return `role "${user}" lacks a privilege on ${at} (${message}): create the database for it once with ` +
      `sudo -u postgres createdb -O ${user} ${db}, or let it create databases: sudo -u postgres psql -c "ALTER ROLE \\"${user}\\" CREATEDB".`;
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `${at}: the host name is not known; check DATABASE_URL.`;
  return null;
}
