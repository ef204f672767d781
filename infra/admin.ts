// Operator CLI. Output is one JSON line on stdout; bad arguments print one line on stderr and exit 2, and
// nothing is created (every command writes in one transaction, after all arguments are checked).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { bootstrapOrganization } from '../shared/accounts/bootstrap.ts';
import { getPlan, setPlan } from '../shared/usage/plan.ts';
import { decideVetting } from '../shared/caller-trust/enterprise/registrations.ts';
import { getLimits, LIMIT_RANGES, setLimits, setNumberMaxCallMinutes, type LimitsPatch } from '../shared/calls/limits.ts';
import { createApiKey } from '../shared/accounts/keys.ts';
import { revokeAndAnnounce } from '../shared/accounts/revocation.ts';
import { loadConfig } from '../shared/config.ts';
import { createDb } from '../shared/db.ts';
import { isUuid } from '../shared/ids.ts';
import { isE164 } from '../shared/phone/e164.ts';
import { checkImportNumbers, IMPORT_BATCH_MAX, importNumbers } from '../shared/numbers/import.ts';
import { DomainError } from '../shared/errors.ts';
import { configKeyer, connectRedis } from '../shared/redis.ts';
import { DEFAULT_ALL_SCOPES, parseScopes, type Scope } from '../shared/scopes.ts';
import { prepareDatabase } from './prepare.ts';

import { createUser } from '../shared/users/members.ts';
import { isRole, type Role } from '../shared/users/roles.ts';

class UsageError extends Error {}
/** Help is text for people, not a JSON line. */
class HelpText { constructor(readonly text: string) {} }

/** Every command with its flags: `admin --help`, `admin help`, `admin help <command>` print it. */
const COMMANDS: { name: string; synopsis: string; about: string; flags: [string, string][] }[] = [
  {
    name: 'bootstrap', synopsis: '--org <name> [--email <email>] [--scopes <csv>|all] [--numbers <n>] [--demo]',
    about: 'Create an organization with its owner user, an API key (printed once) and active sandbox numbers.',
    flags: [
      ['--org <name>', 'organization name (required)'],
      ['--email <email>', 'owner user e-mail (default: a generated one)'],
      ['--scopes <csv>|all', 'scopes of the key; all = every scope but compliance:write (default all)'],
      ['--numbers <n>', 'active sandbox numbers to give it, 0-100 (default 1)'],
      ['--demo', 'make the key a demo key (120 requests/minute, demo destination allowlist)'],
    ],
  },
  {
    name: 'user create', synopsis: '--org <id> --email <email> --role <owner|admin|developer|agent|viewer> [--password <p>]',
    about: 'Create a user of an organization who signs in to the console. Without --password: prints a one-time sign-in '
      + 'link (an invitation, valid 7 days) where they choose their password.',
    flags: [
      ['--org <id>', 'organization id (required)'],
      ['--email <email>', 'what they sign in with (required; one active user per email on the platform)'],
      ['--role <role>', 'owner, admin, developer, agent or viewer (required)'],
      ['--password <p>', 'their password, at least 12 characters (default: none, print a sign-in link)'],
    ],
  },
  {
    name: 'key create', synopsis: '--org <id> [--scopes <csv>|all] [--owner] [--demo] [--allowed-from <csv>] [--allowed-to <csv>] [--rate-limit <n>] [--sub-entity <id>]',
    about: 'Create another API key for an organization (printed once).',
    flags: [
      ['--org <id>', 'organization id (required; npm start prints it)'],
      ['--scopes <csv>|all', 'scopes of the key (default all)'],
      ['--owner', 'the key belongs to the organization\'s owner (calls name them; Number Health operations that need a user work); default: a key of the organization alone, no user (--no-user, the old spelling, still means that)'],
      ['--demo', 'a demo key'],
      ['--allowed-from <csv>', 'ceiling of caller IDs the key may use (E.164, comma separated)'],
      ['--allowed-to <csv>', 'ceiling of destinations the key may call'],
      ['--rate-limit <n>', 'requests per minute for this key (default 600, demo 120)'],
      ['--sub-entity <id>', 'limit the key to one sub-entity of the organization: it sees and touches only that sub-entity\'s numbers, calls, contacts and SMS (docs/reference/sub-entities.md)'],
    ],
  },
  {
    name: 'key revoke', synopsis: '--key-id <id>', about: 'Revoke a key; every gateway refuses it at once.',
    flags: [['--key-id <id>', 'the api_key_id printed when the key was made (required)']],
  },
  {
    name: 'org limits', synopsis: '--org <id> [--channels <n>] [--calls-per-minute <n>] [--daily-spend-cap-cents <n>] [--allow-countries <csv>|none] [--max-call-minutes <n>] [--content-policy standard|hipaa]',
    about: 'Show an organization\'s call guardrails, or change the ones given.',
    flags: [
      ['--org <id>', 'organization id (required)'],
      ['--channels <n>', 'concurrent channels (one per live call leg)'],
      ['--calls-per-minute <n>', 'calls placed per minute'],
      ['--daily-spend-cap-cents <n>', 'call spend per UTC day, in cents'],
      ['--allow-countries <csv>|none', 'ISO countries international calls may reach (premium ranges stay blocked)'],
      ['--max-call-minutes <n>', 'call-length limit (60 by default, at most 180)'],
      ['--content-policy standard|hipaa', 'hipaa hides transcripts and recordings'],
    ],
  },
  {
    name: 'org plan', synopsis: '--org <id> [--included-minutes <n>|none] [--active true|false]',
    about: 'Show an organization\'s plan, or change it: billed voice minutes included per UTC month (none: no limit, the default) and whether its subscription is active (inactive: calls answer 402 no_active_subscription).',
    flags: [
      ['--org <id>', 'organization id (required)'],
      ['--included-minutes <n>|none', 'minutes per month, 0-100000000; at the limit calls answer 402 voice_usage_exhausted'],
      ['--active true|false', 'subscription active (a new organization is active)'],
    ],
  },
  {
    name: 'number limits', synopsis: '--org <id> --number <e164> --max-call-minutes <n>|default',
    about: 'Set one number\'s call-length limit, or go back to the organization\'s.',
    flags: [
      ['--org <id>', 'organization id (required)'],
      ['--number <e164>', 'a number the organization holds (required)'],
      ['--max-call-minutes <n>|default', 'minutes, or default (required)'],
    ],
  },
  {
    name: 'number import', synopsis: '--org <id> [--name <label>] <e164> [<e164> ...]',
    about: `Bring numbers (DIDs) the SIP trunk provider sold onto an organization: ACTIVE at once (source imported, `
      + `number_purchased fires). One result per number: imported, already_held (run it again freely) or refused (held by `
      + `another organization). 1 to ${IMPORT_BATCH_MAX} distinct numbers per run; a malformed one imports nothing.`,
    flags: [
      ['--org <id>', 'organization id (required)'],
      ['--name <label>', 'a label for the numbers (default: the number itself)'],
      ['<e164> ...', 'the numbers, E.164 (+14155550100), separated by spaces (required)'],
    ],
  },
  {
    name: 'enterprise approve', synopsis: '--id <registration id>',
    about: 'Approve a PENDING_VETTING enterprise registration by hand (fires enterprise.status.updated; the organization '
      + 'gets own_brand_enterprise).',
    flags: [['--id <id>', 'the enterprise registration id (required)']],
  },
  {
    name: 'enterprise reject', synopsis: '--id <registration id> --reason <text> [--reason <text> ...]',
    about: 'Reject a PENDING_VETTING enterprise registration by hand with the reasons the customer sees (fires '
      + 'enterprise.status.updated; the customer fixes and re-signs with POST .../resign).',
    flags: [
      ['--id <id>', 'the enterprise registration id (required)'],
      ['--reason <text>', 'a reason, "code: explanation" (required; repeat for several, at most 10)'],
    ],
  },
];

function help(topic?: string): string {
  const pad = (s: string) => s.padEnd(34);
  const one = (c: (typeof COMMANDS)[number]) =>
    `admin ${c.name} ${c.synopsis}\n  ${c.about}\n${c.flags.map(([f, d]) => `    ${pad(f)}${d}`).join('\n')}`;
  if (topic) {
    const c = COMMANDS.find((x) => x.name === topic);
    if (!c) throw new UsageError(`no command "${topic}"; expected one of: ${COMMANDS.map((x) => x.name).join(', ')}`);
    return one(c) + '\n';
  }
  return `Operator CLI: npm run --silent admin -- <command> [flags]
Each command prints one JSON line; bad arguments print one line on stderr and exit 2, and nothing is created.
Environment: DATABASE_URL, REDIS_URL, REDIS_PREFIX (as the processes use them).

${COMMANDS.map(one).join('\n\n')}

admin help <command>   this text for one command, e.g. admin help key create
`;
}

function parse(args: string[], options: ParseArgsConfig['options']) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values as Record<string, string | boolean | undefined>;
  } catch (e) {
    throw new UsageError((e as Error).message.split('\n')[0]);
  }
}

function scopesOf(v: unknown): Scope[] {
  if (v === undefined) return [...DEFAULT_ALL_SCOPES];
  try {
    return parseScopes(String(v));
  } catch (e) {
    throw new UsageError(`--scopes: ${(e as Error).message}`);
  }
}

function count(v: unknown, name: string, min: number, max: number, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!/^\d+$/.test(String(v)) || n < min || n > max) throw new UsageError(`${name} must be a whole number from ${min} to ${max}`);
  return n;
}

function numbers(v: unknown, name: string): string[] {
  if (v === undefined) return [];
  const list = String(v).split(',').map((s) => s.trim()).filter(Boolean);
  const bad = list.filter((n) => !isE164(n));
  if (bad.length) throw new UsageError(`${name}: not E.164 numbers: ${bad.join(', ')}`);
  return list;
}

/** ISO 3166 alpha-2 codes, comma separated; "none" (or empty) clears the list. */
function countries(v: unknown): string[] {
  const raw = String(v).trim();
  if (raw === '' || raw === 'none') return [];
  const list = raw.split(',').map((s) => s.trim().toUpperCase()).filter(Boolean);
  const bad = list.filter((c) => !/^[A-Z]{2}$/.test(c));
  if (bad.length) throw new UsageError(`--allow-countries: not ISO country codes: ${bad.join(', ')}`);
  return [...new Set(list)];
}

async function main(argv: string[]): Promise<unknown> {
  const [cmd, sub, ...rest] = argv;
  if (cmd === 'help' || cmd === '--help' || cmd === '-h') return new HelpText(help([sub, ...rest].filter(Boolean).join(' ') || undefined));
  if (argv.includes('--help') || argv.includes('-h')) return new HelpText(help([cmd, sub].filter((x) => x && !x.startsWith('-')).join(' ')));
  const config = loadConfig();
  if (cmd === 'bootstrap') {
    const o = parse([sub, ...rest].filter((x) => x !== undefined), {
      org: { type: 'string' }, email: { type: 'string' }, scopes: { type: 'string' }, numbers: { type: 'string' },
      demo: { type: 'boolean' },
    });
    if (!o.org || !String(o.org).trim()) throw new UsageError('--org <name> is required');
    if (o.email !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(String(o.email))) throw new UsageError('--email must be an email address');
    const input = {
      org: String(o.org).trim(), email: o.email as string | undefined, scopes: scopesOf(o.scopes),
      numbers: count(o.numbers, '--numbers', 0, 100, 1), demo: o.demo === true,
    };
    await prepareDatabase(config);
    const db = createDb(config.databaseUrl, 2);
    try {
      return await bootstrapOrganization(db, input);
    } finally {
      await db.$pool.end();
    }
  }
  if (cmd === 'key' && sub === 'create') {
    const o = parse(rest, {
      org: { type: 'string' }, scopes: { type: 'string' }, owner: { type: 'boolean' }, 'no-user': { type: 'boolean' }, demo: { type: 'boolean' },
      'allowed-from': { type: 'string' }, 'allowed-to': { type: 'string' }, 'rate-limit': { type: 'string' },
      'sub-entity': { type: 'string' },
    });
    if (!o.org || !isUuid(String(o.org))) throw new UsageError('--org <organization id> is required (a uuid)');
    const scopes = scopesOf(o.scopes);
    const allowedFrom = numbers(o['allowed-from'], '--allowed-from');
    const allowedTo = numbers(o['allowed-to'], '--allowed-to');
    const rate = o['rate-limit'] === undefined ? null : count(o['rate-limit'], '--rate-limit', 1, 10_000_000, 0);
    const subEntity = o['sub-entity'] === undefined ? null : String(o['sub-entity']).trim();
    if (subEntity !== null && !isUuid(subEntity)) throw new UsageError('--sub-entity <id> must be a sub-entity id (a uuid)');
    await prepareDatabase(config);
    const db = createDb(config.databaseUrl, 2);
    try {
      const org = await db.oneOrNone('SELECT id, owner_user_id FROM organizations WHERE id = $1', [o.org]);
      if (!org) throw new UsageError(`no organization ${o.org}`);
      if (subEntity !== null && !(await db.oneOrNone('SELECT 1 FROM sub_entities WHERE id = $1 AND organization_id = $2', [subEntity, org.id]))) {
        throw new UsageError(`no sub-entity ${subEntity} in organization ${org.id}`);
      }
      const k = await createApiKey(db, {
        organizationId: org.id, userId: o.owner && !o['no-user'] ? org.owner_user_id : null, scopes, isDemo: o.demo === true,
        allowedFrom, allowedTo, rateLimitPerMinute: rate, subEntityId: subEntity,
      });
      return { api_key: k.apiKey, api_key_id: k.apiKeyId, ...(subEntity ? { sub_entity_id: subEntity } : {}) };
    } finally {
      await db.$pool.end();
    }
  }
  if (cmd === 'user' && sub === 'create') {
    const o = parse(rest, { org: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' }, password: { type: 'string' } });
    if (!o.org || !isUuid(String(o.org))) throw new UsageError('--org <organization id> is required (a uuid)');
    if (!o.email) throw new UsageError('--email <email> is required');
    if (!o.role || !isRole(String(o.role))) throw new UsageError('--role must be owner, admin, developer, agent or viewer');
    await prepareDatabase(config);
    const db = createDb(config.databaseUrl, 2);
    try {
      const { user, invitationToken } = await createUser(db, { organizationId: String(o.org), email: String(o.email),
        role: String(o.role) as Role, password: o.password === undefined ? undefined : String(o.password) }).catch((e) => {
        if (e instanceof DomainError) throw new UsageError(`${e.message}${e.fields ? ` (${Object.entries(e.fields).map(([k, v]) => `${k}: ${v}`).join('; ')})` : ''}`);
        throw e;
      });
      const base = config.publicUrl ?? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
      return { user_id: user.id, email: user.email, role: user.role, organization_id: user.organization_id,
        ...(invitationToken ? { sign_in_link: `${base}/console/accept-invitation#token=${invitationToken}` } : {}) };
    } finally {
      await db.$pool.end();
    }
  }
  if (cmd === 'key' && sub === 'revoke') {
    const o = parse(rest, { 'key-id': { type: 'string' } });
    if (!o['key-id'] || !isUuid(String(o['key-id']))) throw new UsageError('--key-id <id> is required (a uuid)');
    await prepareDatabase(config);
    const db = createDb(config.databaseUrl, 2);
    const redis = connectRedis(config);
    try {
      const done = await revokeAndAnnounce(db, redis, configKeyer(config), String(o['key-id']));
      if (!done) throw new UsageError(`no live key ${o['key-id']}`);
      return { api_key_id: o['key-id'], revoked: true };
    } finally {
      await db.$pool.end();
      redis.disconnect();
    }
  }
  if (cmd === 'org' && sub === 'limits') {
    const o = parse(rest, {
      org: { type: 'string' }, channels: { type: 'string' }, 'calls-per-minute': { type: 'string' },
      'daily-spend-cap-cents': { type: 'string' }, 'allow-countries': { type: 'string' }, 'max-call-minutes': { type: 'string' },
      'content-policy': { type: 'string' },
    });
    if (!o.org || !isUuid(String(o.org))) throw new UsageError('--org <organization id> is required (a uuid)');
    const opt = (name: string, range: readonly [number, number]) =>
      (o[name] === undefined ? undefined : count(o[name], `--${name}`, range[0], range[1], 0));
    const patch: LimitsPatch = {
      channel_limit: opt('channels', LIMIT_RANGES.channel_limit),
      calls_per_minute: opt('calls-per-minute', LIMIT_RANGES.calls_per_minute),
      daily_spend_cap_cents: opt('daily-spend-cap-cents', LIMIT_RANGES.daily_spend_cap_cents),
      max_call_minutes: opt('max-call-minutes', LIMIT_RANGES.max_call_minutes),
    };
    if (o['allow-countries'] !== undefined) patch.allow_countries = countries(o['allow-countries']);
    if (o['content-policy'] !== undefined) {
      if (o['content-policy'] !== 'standard' && o['content-policy'] !== 'hipaa') throw new UsageError('--content-policy must be standard or hipaa');
      patch.content_policy = o['content-policy'];
    }
    await prepareDatabase(config);
    const db = createDb(config.databaseUrl, 2);
    try {
      const limits = Object.values(patch).some((v) => v !== undefined)
        ? await setLimits(db, String(o.org), patch)
        : await getLimits(db, String(o.org));
      if (!limits) throw new UsageError(`no organization ${o.org}`);
      return limits;
    } finally {
      await db.$pool.end();
    }
  }
  if (cmd === 'org' && sub === 'plan') {
    const o = parse(rest, { org: { type: 'string' }, 'included-minutes': { type: 'string' }, active: { type: 'string' } });
    if (!o.org || !isUuid(String(o.org))) throw new UsageError('--org <organization id> is required (a uuid)');
    const minutes = o['included-minutes'];
    const includedMinutes = minutes === undefined ? undefined : minutes === 'none' ? null : count(minutes, '--included-minutes', 0, 100_000_000, 0);
    if (o.active !== undefined && o.active !== 'true' && o.active !== 'false') throw new UsageError('--active must be true or false');
    const active = o.active === undefined ? undefined : o.active === 'true';
    await prepareDatabase(config);
    const db = createDb(config.databaseUrl, 2);
    try {
      const plan = includedMinutes === undefined && active === undefined
        ? await getPlan(db, String(o.org)) : await setPlan(db, String(o.org), { active, includedMinutes });
      if (!plan) throw new UsageError(`no organization ${o.org}`);
      return plan;
    } finally {
      await db.$pool.end();
    }
  }
  if (cmd === 'number' && sub === 'limits') {
    const o = parse(rest, { org: { type: 'string' }, number: { type: 'string' }, 'max-call-minutes': { type: 'string' } });
    if (!o.org || !isUuid(String(o.org))) throw new UsageError('--org <organization id> is required (a uuid)');
    if (!o.number || !isE164(String(o.number))) throw new UsageError('--number <e164> is required (an E.164 number)');
    if (o['max-call-minutes'] === undefined) throw new UsageError('--max-call-minutes <n>|default is required');
    const minutes = o['max-call-minutes'] === 'default'
      ? null : count(o['max-call-minutes'], '--max-call-minutes', LIMIT_RANGES.max_call_minutes[0], LIMIT_RANGES.max_call_minutes[1], 0);
    await prepareDatabase(config);
    const db = createDb(config.databaseUrl, 2);
    try {
      const row = await setNumberMaxCallMinutes(db, String(o.org), String(o.number), minutes);
      if (!row) throw new UsageError(`no number ${o.number} held by organization ${o.org}`);
      return row;
    } finally {
      await db.$pool.end();
    }
  }
  if (cmd === 'number' && sub === 'import') {
    let o: { values: { org?: string; name?: string }; positionals: string[] };
    try {
      o = parseArgs({ args: rest, options: { org: { type: 'string' }, name: { type: 'string' } }, strict: true, allowPositionals: true });
    } catch (e) {
      throw new UsageError((e as Error).message.split('\n')[0]);
    }
    if (!o.values.org || !isUuid(o.values.org)) throw new UsageError('--org <organization id> is required (a uuid)');
    if (o.values.name !== undefined && (!o.values.name.trim() || o.values.name.length > 100)) throw new UsageError('--name must be 1 to 100 characters');
    let list: string[];
    try {
      list = checkImportNumbers(o.positionals, 'number');
    } catch (e) {
      // "number[2]" names the third number given: say which one.
      const fields = Object.entries(e instanceof DomainError ? e.fields ?? {} : {});
      const which = (f: string) => { const i = /^number\[(\d+)\]$/.exec(f)?.[1]; return i === undefined ? 'numbers' : `"${o.positionals[Number(i)]}"`; };
      throw new UsageError(fields.map(([f, m]) => `${which(f)} ${m.replace(/number\[(\d+)\]/, (_, i) => `"${o.positionals[Number(i)]}"`)}`).join('; ') || (e as Error).message);
    }
    await prepareDatabase(config);
    const db = createDb(config.databaseUrl, 2);
    try {
      const org = await db.oneOrNone('SELECT id FROM organizations WHERE id = $1', [o.values.org]);
      if (!org) throw new UsageError(`no organization ${o.values.org}`);
      const s = await importNumbers(db, { organizationId: org.id, userId: null }, list, { name: o.values.name?.trim() });
      return {
        organization_id: org.id, imported: s.imported, already_held: s.already_held, refused: s.refused,
        results: s.results.map((r) => (r.result === 'refused'
          ? { phone_number: r.phone_number, result: r.result, error: r.error.code }
          : { phone_number: r.phone_number, result: r.result, id: r.number.id })),
      };
    } finally {
      await db.$pool.end();
    }
  }
  if (cmd === 'enterprise' && (sub === 'approve' || sub === 'reject')) {
    let o: { id?: string; reason?: string[] };
    try {
      o = parseArgs({ args: rest, options: { id: { type: 'string' }, reason: { type: 'string', multiple: true } }, strict: true,
        allowPositionals: false }).values;
    } catch (e) {
      throw new UsageError((e as Error).message.split('\n')[0]);
    }
    if (!o.id || !isUuid(String(o.id))) throw new UsageError('--id <registration id> is required (a uuid)');
    const reasons = (o.reason ?? []).map((r) => r.trim()).filter(Boolean);
    if (sub === 'reject' && !reasons.length) throw new UsageError('--reason <text> is required (repeat it for several reasons)');
    if (sub === 'approve' && reasons.length) throw new UsageError('--reason is only for reject');
    if (reasons.length > 10 || reasons.some((r) => r.length > 500)) throw new UsageError('at most 10 reasons of at most 500 characters');
    await prepareDatabase(config);
    const db = createDb(config.databaseUrl, 2);
    try {
      const row = await decideVetting(db, String(o.id), null, { status: sub === 'approve' ? 'APPROVED' : 'REJECTED', reasons });
      if (!row) {
        const cur = await db.oneOrNone('SELECT status FROM enterprise_registrations WHERE id = $1 AND deleted_at IS NULL', [o.id]);
        throw new UsageError(cur ? `registration ${o.id} is ${cur.status}; only a PENDING_VETTING one can be decided` : `no registration ${o.id}`);
      }
      return { id: row.id, organization_id: row.organization_id, status: row.status, reasons: row.rejection_reasons };
    } finally {
      await db.$pool.end();
    }
  }
  // One line, like every usage error.
  throw new UsageError(`${cmd ? `unknown command "${[cmd, sub].filter(Boolean).join(' ')}"` : 'missing command'}; expected one of: ${COMMANDS.map((c) => c.name).join(', ')} (admin --help lists their flags)`);
}

try {
  const out = await main(process.argv.slice(2));
  process.stdout.write(out instanceof HelpText ? out.text : JSON.stringify(out) + '\n');
} catch (e) {
  if (e instanceof UsageError) {
    process.stderr.write(`admin: ${e.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`admin: ${(e as Error).message}\n`);
  process.exit(1);
}
