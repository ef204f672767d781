// The operator CLI, run as `npm run --silent admin -- ...` child processes against this file's database and Redis
// prefix: bootstrap's one JSON line and a key that works, key create with every flag reflected by /v1/me and
// /v1/account, key revoke, and bad arguments (exit 2, one stderr line, nothing created).
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { sha256 } from '../../shared/ids.ts';
import { isE164 } from '../../shared/phone/e164.ts';
import { DEFAULT_ALL_SCOPES } from '../../shared/scopes.ts';
import { testEnv } from '../helpers/env.ts';
import { pool, type TapTest } from '../helpers/pool.ts';
import { runAdmin, type CliResult } from '../helpers/admin-cli.ts';

const env = await testEnv(t);
const admin = (...args: string[]) => runAdmin(env.env, args);

/** stdout must be exactly one line of JSON; returns it parsed. */
function oneJsonLine(t: TapTest, r: CliResult): any {
  t.equal(r.code, 0, `exit 0 (stderr: ${r.stderr})`);
  t.equal(r.stderr, '', 'nothing on stderr');
  t.ok(r.stdout.endsWith('\n'), 'newline-terminated');
  t.equal(r.stdout.trimEnd().split('\n').length, 1, 'exactly one line on stdout');
  return JSON.parse(r.stdout);
}

const counts = async () => env.db.one(`SELECT (SELECT count(*) FROM organizations)::int AS orgs, (SELECT count(*) FROM users)::int AS users,
  (SELECT count(*) FROM api_keys)::int AS keys, (SELECT count(*) FROM phone_numbers)::int AS numbers`);

t.test('bootstrap prints one JSON line and the key works against the gateway', async (t) => {
  const out = oneJsonLine(t, await admin('bootstrap', '--org', 'CLI Works', '--email', 'ops@cli-works.example', '--numbers', '3'));
  t.same(Object.keys(out).sort(), ['api_key', 'api_key_id', 'organization_id', 'phone_numbers', 'user_id']);
  t.match(out.organization_id, /^[0-9a-f-]{36}$/);
  t.match(out.user_id, /^[0-9a-f-]{36}$/);
  t.match(out.api_key_id, /^[0-9a-f-]{36}$/);
  t.match(out.api_key, /^olk_[0-9A-Za-z]{40}$/, 'fixed service prefix plus a random token');
  t.equal(out.phone_numbers.length, 3, 'as many numbers as --numbers');
  t.ok(out.phone_numbers.every(isE164), 'E.164');
  t.equal(new Set(out.phone_numbers).size, 3, 'distinct');

  const acct = await env.request('GET', '/v1/account', { key: out.api_key });
  t.equal(acct.status, 200);
  t.equal(acct.body.data.api_key_id, out.api_key_id);
  t.same(acct.body.data.organization, { id: out.organization_id, name: 'CLI Works', slug: 'cli-works' });
  t.equal(acct.body.data.user.id, out.user_id);
  t.equal(acct.body.data.user.email, 'ops@cli-works.example');
  t.equal(acct.body.data.footprint.phone_numbers, 3);
  t.equal(acct.body.data.is_demo, false);
  const list = await env.request('GET', '/v1/phone-numbers', { key: out.api_key });
  t.same(list.body.data.map((n: { phone_number: string }) => n.phone_number).sort(), [...out.phone_numbers].sort());
  t.ok(list.body.data.every((n: { is_active: boolean }) => n.is_active), 'active numbers');
  const me = await env.request('GET', '/v1/me', { key: out.api_key });
  t.same(me.body.data.scopes, [...DEFAULT_ALL_SCOPES].sort(), 'default scopes: all but compliance:write');

  const row = await env.db.one('SELECT * FROM api_keys WHERE id = $1', [out.api_key_id]);
  t.same(row.key_hash, sha256(out.api_key), 'only the SHA-256 hash is stored');
  t.notOk(JSON.stringify(row).includes(out.api_key.slice(4)), 'the plaintext is not stored');
});

t.test('bootstrap options: --scopes, --numbers 0, --demo, default numbers', async (t) => {
  const narrow = oneJsonLine(t, await admin('bootstrap', '--org', 'CLI Narrow', '--scopes', 'account:read', '--numbers', '0'));
  t.same(narrow.phone_numbers, []);
  t.equal((await env.request('GET', '/v1/phone-numbers', { key: narrow.api_key })).status, 403, 'scope list applied');
  t.same((await env.request('GET', '/v1/me', { key: narrow.api_key })).body.data.scopes, ['account:read']);

  const demo = oneJsonLine(t, await admin('bootstrap', '--org', 'CLI Demo', '--demo', '--scopes', 'all'));
  t.equal(demo.phone_numbers.length, 1, '--numbers defaults to 1');
  const acct = await env.request('GET', '/v1/account', { key: demo.api_key });
  t.equal(acct.body.data.is_demo, true);
  t.equal(acct.headers['x-ratelimit-limit'], '120', 'demo keys get the demo limit');
  t.notOk((await env.request('GET', '/v1/me', { key: demo.api_key })).body.data.scopes.includes('compliance:write'),
    '"all" never grants compliance:write');
});

t.test('key create with every flag; /v1/me and /v1/account reflect it', async (t) => {
  const org = oneJsonLine(t, await admin('bootstrap', '--org', 'CLI Keys', '--numbers', '2'));
  const [from] = org.phone_numbers;
  const out = oneJsonLine(t, await admin('key', 'create', '--org', org.organization_id, '--scopes', 'account:read,calls:write',
    '--no-user', '--demo', '--allowed-from', from, '--allowed-to', '+14155550123,+442071838750', '--rate-limit', '42'));
  t.same(Object.keys(out).sort(), ['api_key', 'api_key_id']);
  t.match(out.api_key, /^olk_/);

  const me = await env.request('GET', '/v1/me', { key: out.api_key });
  t.equal(me.status, 200);
  t.same(me.body.data.scopes, ['account:read', 'calls:write']);
  t.equal(me.body.data.user, null, '--no-user');
  const owned = oneJsonLine(t, await admin('key', 'create', '--org', org.organization_id, '--scopes', 'account:read', '--owner'));
  t.equal((await env.request('GET', '/v1/me', { key: owned.api_key })).body.data.user?.id, org.user_id, '--owner: the owner\'s key');
  t.equal(me.body.data.organization.id, org.organization_id);
  t.same(me.body.data.api_key, {
    id: out.api_key_id, kind: 'api_key', is_demo: true, allowed_from: [from], allowed_to: ['+14155550123', '+442071838750'],
    rate_limit_per_minute: 42,
  });
  const acct = await env.request('GET', '/v1/account', { key: out.api_key });
  t.equal(acct.body.data.api_key_id, out.api_key_id);
  t.equal(acct.body.data.user, null);
  t.equal(acct.body.data.is_demo, true);
  t.equal(acct.headers['x-ratelimit-limit'], '42', '--rate-limit overrides the demo limit');
  t.equal((await env.request('GET', '/v1/phone-numbers', { key: out.api_key })).status, 403, 'only the listed scopes');

  const plain = oneJsonLine(t, await admin('key', 'create', '--org', org.organization_id));
  const pm = await env.request('GET', '/v1/me', { key: plain.api_key });
  t.equal(pm.body.data.user, null, 'by default a key of the organization alone (no user)');
  t.same(pm.body.data.scopes, [...DEFAULT_ALL_SCOPES].sort());
  t.same([pm.body.data.api_key.is_demo, pm.body.data.api_key.allowed_from, pm.body.data.api_key.allowed_to, pm.body.data.api_key.rate_limit_per_minute],
    [false, [], [], 600]);
});

t.test('key revoke', async (t) => {
  const org = oneJsonLine(t, await admin('bootstrap', '--org', 'CLI Revoke', '--numbers', '0'));
  t.equal((await env.request('GET', '/v1/account', { key: org.api_key })).status, 200);
  const out = oneJsonLine(t, await admin('key', 'revoke', '--key-id', org.api_key_id));
  t.same(out, { api_key_id: org.api_key_id, revoked: true });
  const r = await env.request('GET', '/v1/account', { key: org.api_key });
  t.equal(r.status, 401, 'refused at once');
  t.equal(r.body.error.code, 'unauthorized');
});

t.test('bad arguments: exit 2, one stderr line, nothing created', async (t) => {
  const org = oneJsonLine(t, await admin('bootstrap', '--org', 'CLI Bad Args', '--numbers', '1'));
  const before = await counts();
  // The cases the contract names go through `npm run --silent admin` (exit code and stderr as an operator sees
  // them); the others run the script's own command directly, to keep this file fast on a loaded machine.
  const viaNpm = new Set(['bootstrap without --org', 'bootstrap with an unknown scope', 'bootstrap --numbers abc',
    'bootstrap with an unknown flag', 'key create with a bad uuid', 'unknown command']);
  const cases: [string, string[]][] = [
    ['bootstrap without --org', ['bootstrap']],
    ['bootstrap with an empty --org', ['bootstrap', '--org', ' ']],
    ['bootstrap --org without a value', ['bootstrap', '--org']],
    ['bootstrap with an unknown scope', ['bootstrap', '--org', 'X', '--scopes', 'account:read,calls:dance']],
    ['bootstrap with an empty scope list', ['bootstrap', '--org', 'X', '--scopes', ',']],
    ['bootstrap --numbers abc', ['bootstrap', '--org', 'X', '--numbers', 'abc']],
    ['bootstrap --numbers -1', ['bootstrap', '--org', 'X', '--numbers', '-1']],
    ['bootstrap --numbers 2.5', ['bootstrap', '--org', 'X', '--numbers', '2.5']],
    ['bootstrap --numbers 101', ['bootstrap', '--org', 'X', '--numbers', '101']],
    ['bootstrap with an unknown flag', ['bootstrap', '--org', 'X', '--colour', 'red']],
    ['bootstrap with a positional', ['bootstrap', '--org', 'X', 'extra']],
    ['bootstrap with a bad email', ['bootstrap', '--org', 'X', '--email', 'not-an-email']],
    ['key create without --org', ['key', 'create']],
    ['key create with a bad uuid', ['key', 'create', '--org', 'not-a-uuid']],
    ['key create for an unknown organization', ['key', 'create', '--org', randomUUID()]],
    ['key create with an unknown scope', ['key', 'create', '--org', org.organization_id, '--scopes', 'root']],
    ['key create with a bad --allowed-from', ['key', 'create', '--org', org.organization_id, '--allowed-from', '4155550100']],
    ['key create with a bad --allowed-to', ['key', 'create', '--org', org.organization_id, '--allowed-to', '+14155550100,+0123']],
    ['key create --rate-limit 0', ['key', 'create', '--org', org.organization_id, '--rate-limit', '0']],
    ['key create --rate-limit abc', ['key', 'create', '--org', org.organization_id, '--rate-limit', 'abc']],
    ['key create with an unknown flag', ['key', 'create', '--org', org.organization_id, '--admin']],
    ['key revoke without --key-id', ['key', 'revoke']],
    ['key revoke with a bad uuid', ['key', 'revoke', '--key-id', '1234']],
    ['key revoke of an unknown key', ['key', 'revoke', '--key-id', randomUUID()]],
    ['unknown command', ['frobnicate']],
    ['unknown key subcommand', ['key', 'delete', '--key-id', org.api_key_id]],
    ['no command', []],
  ];
  const results = await pool(cases, 4, ([why, args]) => runAdmin(env.env, args, { direct: !viaNpm.has(why) }));
  cases.forEach(([why, args], i) => {
    const r = results[i];
    t.equal(r.code, 2, `${why}: exit code 2 (${JSON.stringify(args)})`);
    t.equal(r.stdout, '', `${why}: nothing on stdout`);
    const lines = r.stderr.trimEnd().split('\n');
    t.equal(lines.length, 1, `${why}: one stderr line (${JSON.stringify(r.stderr)})`);
    t.match(lines[0], /^admin: \S/, `${why}: an error message`);
  });
  t.same(await counts(), before, 'no organization, user, key or number was created');
  t.equal((await env.request('GET', '/v1/account', { key: org.api_key })).status, 200, 'the existing key was not revoked');
});

t.test('--help, help and help <command> list every command and flag, exit 0', async (t) => {
  const [all, viaHelp, one, flag, unknown] = await Promise.all([
    runAdmin(env.env, ['--help'], { direct: true }),
    runAdmin(env.env, ['help']),
    runAdmin(env.env, ['help', 'org', 'limits'], { direct: true }),
    runAdmin(env.env, ['key', 'create', '--help'], { direct: true }),
    runAdmin(env.env, ['help', 'frob'], { direct: true }),
  ]);
  for (const [what, r] of [['--help', all], ['help', viaHelp]] as const) {
    t.equal(r.code, 0, `${what}: exit 0`);
    for (const cmd of ['bootstrap', 'key create', 'key revoke', 'org limits', 'number limits']) t.match(r.stdout, `admin ${cmd} `, `${what} names ${cmd}`);
    for (const f of ['--daily-spend-cap-cents', '--allowed-to', '--rate-limit', '--key-id', '--max-call-minutes', '--numbers']) t.match(r.stdout, f, `${what} lists ${f}`);
  }
  t.equal(one.code, 0);
  t.match(one.stdout, /^admin org limits /);
  t.match(one.stdout, '--content-policy standard|hipaa');
  t.notMatch(one.stdout, 'admin key create', 'help <command> shows only that command');
  t.equal(flag.code, 0, '<command> --help is help too');
  t.match(flag.stdout, /^admin key create /);
  t.equal(unknown.code, 2, 'help for an unknown command is a usage error');
  t.match(unknown.stderr, /^admin: no command "frob"; expected one of: bootstrap, user create, key create/);
});
