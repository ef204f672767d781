// Every synchronous error of a dial with its HTTP status and category, the guardrails in their order, key
// ceilings, demo keys, the deprecated spelling of POST /v1/calls, agents, idempotency, and the admin CLI.
// A rejected dial never leaves a row nor holds a channel.
import { spawnSync } from 'node:child_process';
import t, { type Test } from 'tap';
import { setLimits } from '../../shared/calls/limits.ts';
import { uuidv7 } from '../../shared/ids.ts';
import { ROOT } from '../helpers/env.ts';
import { aiCall, callEnv, callOrg, channelAccounts, channelsUsed, dial, settled, type CallOrg } from './helpers.ts';

const { env } = await callEnv(t);

const rows = async (org: CallOrg) => (await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [org.organization_id])).n as number;

/** Expects a rejected dial: status, code, category (or none), optional fields; and that nothing was left behind. */
async function rejected(t: Test, org: CallOrg, send: () => Promise<any>, status: number, code: string, category: string | undefined, field?: string) {
  const before = await rows(org);
  const r = await send();
  t.equal(r.status, status, `${code}: HTTP ${status}`);
  t.equal(r.body?.error?.code, code, `code ${code} (${r.text.slice(0, 200)})`);
  t.equal(r.body?.error?.category, category, `${code}: category ${category}`);
  if (field) t.ok(r.body.error.fields?.[field], `${code}: fields.${field}`);
  t.equal(await rows(org), before, `${code}: no row`);
  // Every channel hold belongs to a call with a row (earlier calls of the test may still be ending).
  const holds = [...(await channelAccounts(env).holds(org.organization_id)).keys()];
  const known = holds.length ? (await env.db.one('SELECT count(*)::int AS n FROM calls WHERE id = ANY($1::uuid[])', [holds])).n : 0;
  t.equal(known, holds.length, `${code}: no channel held for it`);
  return r;
}

const body = (org: CallOrg, o: Record<string, unknown> = {}) => ({ from_number: org.from, to_number: '+14155554567', connect_number: '+14155559999', ...o });
const post = (org: CallOrg, b: unknown, key = org.api_key, headers: Record<string, string> = {}) =>
  env.request('POST', '/v1/calls/dial', { key, body: b, headers });

t.test('validation: destination_missing, destination_invalid, validation_error', async (t) => {
  const org = await callOrg(env);
  await rejected(t, org, () => post(org, body(org, { to_number: undefined })), 400, 'destination_missing', 'invalid_request', 'to_number');
  await rejected(t, org, () => post(org, body(org, { to_number: '' })), 400, 'destination_missing', 'invalid_request', 'to_number');
  for (const bad of ['abc', '14155554567', '+1415555456', '+10155554567', '+999123456789']) {
    await rejected(t, org, () => post(org, body(org, { to_number: bad })), 400, 'destination_invalid', 'invalid_request', 'to_number');
  }
  await rejected(t, org, () => post(org, body(org, { connect_number: '+1' })), 400, 'destination_invalid', 'invalid_request', 'connect_number');
  await rejected(t, org, () => post(org, body(org, { connect_number: undefined })), 400, 'validation_error', undefined, 'connect_number');
  await rejected(t, org, () => post(org, body(org, { from_number: undefined })), 400, 'validation_error', undefined, 'from_number');
  await rejected(t, org, () => post(org, body(org, { from_number: '4155551234' })), 400, 'validation_error', undefined, 'from_number');
  await rejected(t, org, () => post(org, body(org, { record: 'yes' })), 400, 'validation_error', undefined, 'record');
  await rejected(t, org, () => post(org, body(org, { colour: 'blue' })), 400, 'validation_error', undefined, 'colour');
  await rejected(t, org, () => post(org, body(org, { to_number: 14155554567 })), 400, 'validation_error', undefined, 'to_number');
  const ns = await rejected(t, org, () => post(org, body(org, { from_number: undefined, number_set_id: 'ns_1' })), 400, 'validation_error', undefined, 'number_set_id');
  t.match(ns.body.error.fields.number_set_id, /not a Number Set of your organization/, 'number_set_id alone selects from the set');
  const both = await post(org, body(org, { number_set_id: 'ns_1' }));
  t.equal(both.status, 202, 'from_number wins over number_set_id');
  t.equal(both.body.data.from_number, org.from);
  t.equal(both.body.data.selection_source, 'exact_from_number');
});

t.test('key ceilings: from and to outside the credential\'s bounds are 403 forbidden, before any other rule', async (t) => {
  const org = await callOrg(env, {}, { numbers: 2 });
  const [a, b] = org.phone_numbers;
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['calls:write', 'calls:read'],
    allowedFrom: [a], allowedTo: ['+14155554567', '+14155559999'] });
  await rejected(t, org, () => post(org, body(org, { from_number: b }), k.apiKey), 403, 'forbidden', undefined, 'from_number');
  await rejected(t, org, () => post(org, body(org, { from_number: '+14155550000' }), k.apiKey), 403, 'forbidden', undefined, 'from_number');
  await rejected(t, org, () => post(org, body(org, { to_number: '+14155554568' }), k.apiKey), 403, 'forbidden', undefined, 'to_number');
  await rejected(t, org, () => post(org, body(org, { to_number: '+19115550123' }), k.apiKey), 403, 'forbidden', undefined, 'to_number');
  await rejected(t, org, () => post(org, body(org, { connect_number: '+14155559998' }), k.apiKey), 403, 'forbidden', undefined, 'connect_number');
  const ok = await post(org, body(org, { from_number: a }), k.apiKey);
  t.equal(ok.status, 202, 'inside the ceiling');
  const ai = await env.request('POST', '/v1/calls', { key: k.apiKey, body: { from_number: a, to_number: '+14155550001', agent: { greeting: 'Hi' } } });
  t.equal(ai.status, 403, 'POST /v1/calls applies the ceiling too');
  t.equal(ai.body.error.code, 'forbidden');
});

t.test('destination rules: 403 destination_blocked (compliance_block); the organization can allow a country', async (t) => {
  const org = await callOrg(env);
  for (const to of ['+19115550123', '+14159111234', '+14154111234', '+14155551212', '+19005550123', '+14159765555', '+442079460123',
    '+18765550123', '+33142685300', '+881612345678']) {
    await rejected(t, org, () => post(org, body(org, { to_number: to })), 403, 'destination_blocked', 'compliance_block', 'to_number');
  }
  await rejected(t, org, () => post(org, body(org, { connect_number: '+19005550123' })), 403, 'destination_blocked', 'compliance_block', 'connect_number');
  const intl = await post(org, body(org, { to_number: '+442079460123' }));
  t.match(intl.body.error.resolution_hint, /--allow-countries GB/);
  await setLimits(env.db, org.organization_id, { allow_countries: ['GB'] });
  t.equal((await post(org, body(org, { to_number: '+442079460123' }))).status, 202, 'GB allowed');
  await rejected(t, org, () => post(org, body(org, { to_number: '+449012345678' })), 403, 'destination_blocked', 'compliance_block', 'to_number');
  await rejected(t, org, () => post(org, body(org, { to_number: '+19115550123' })), 403, 'destination_blocked', 'compliance_block', 'to_number');
});

t.test('toll fraud: premium, shared-cost and special ranges stay closed whatever the allowlist; short codes are 403', async (t) => {
  const org = await callOrg(env);
  await setLimits(env.db, org.organization_id, { allow_countries: ['AT', 'CH', 'NL', 'BE', 'GB', 'DE', 'FR', 'RU'] });
  const blockedAs: [string, RegExp][] = [
    ['+43930123456', /premium/], ['+43900123456', /premium/], ['+41906123456', /premium/], ['+31909123456', /premium/],
    ['+3290012345', /premium/], ['+44118118', /short code/], ['+333646', /short code/], ['+77011234567', /international/],
    ['+15335550123', /special-rate/], ['+16005550123', /special-rate/], ['+16225550123', /special-rate/],
    ['+447012345678', /special-rate/], ['911', /emergency/], ['+1911', /emergency/], ['112', /emergency/],
    ['+44999', /emergency/], ['+3315', /emergency/],
  ];
  for (const [to, why] of blockedAs) {
    const r = await rejected(t, org, () => post(org, body(org, { to_number: to })), 403, 'destination_blocked', 'compliance_block', 'to_number');
    t.match(r.body.error.fields.to_number, why, `${to}: ${r.body.error.fields.to_number}`);
  }
  const kz = await post(org, body(org, { to_number: '+77011234567' }));
  t.match(kz.body.error.resolution_hint, /--allow-countries KZ/, 'Kazakhstan is KZ, not opened by RU');
  const emergency = await post(org, body(org, { connect_number: '112' }));
  t.equal(emergency.status, 403, 'a bridge never rings an emergency number as its staff phone either');
  t.match(emergency.body.error.fields.connect_number, /emergency/);
  for (const to of ['+49190123456', '+32900123456', '+18805550123', '+18825550123']) {
    await rejected(t, org, () => post(org, body(org, { to_number: to })), 400, 'destination_invalid', 'invalid_request', 'to_number');
  }
  for (const to of ['+442071838750', '+33142685300', '+4930123456', '+43125123456', '+41446681800', '+31201234567', '+74951234567']) {
    t.equal((await post(org, body(org, { to_number: to }))).status, 202, `${to}: an ordinary number of an allowed country`);
  }
});

t.test('demo keys only reach the sandbox\'s allowlisted (555) destinations', async (t) => {
  const org = await callOrg(env, {}, { demo: true });
  const acct = await env.request('GET', '/v1/account', { key: org.api_key });
  t.equal(acct.body.data.is_demo, true);
  await rejected(t, org, () => post(org, body(org, { to_number: '+14157774567' })), 403, 'destination_blocked', 'compliance_block', 'to_number');
  await rejected(t, org, () => post(org, body(org, { connect_number: '+14157779999' })), 403, 'destination_blocked', 'compliance_block', 'connect_number');
  t.equal((await post(org, body(org))).status, 202, 'a sandbox number');
});

t.test('caller ID: call_id_not_verified (422) for numbers the organization does not hold, no_active_number (409) while provisioning', async (t) => {
  const org = await callOrg(env, {}, { numbers: 3 });
  const other = await callOrg(env);
  await rejected(t, org, () => post(org, body(org, { from_number: other.from })), 422, 'call_id_not_verified', 'invalid_request', 'from_number');
  await rejected(t, org, () => post(org, body(org, { from_number: '+14155550000' })), 422, 'call_id_not_verified', 'invalid_request', 'from_number');
  await env.db.none(`UPDATE phone_numbers SET status = 'PROVISIONING' WHERE phone_number = $1`, [org.phone_numbers[1]]);
  await rejected(t, org, () => post(org, body(org, { from_number: org.phone_numbers[1] })), 409, 'no_active_number', 'invalid_request', 'from_number');
  await env.db.none(`UPDATE phone_numbers SET status = 'RELEASED', released_at = now() WHERE phone_number = $1`, [org.phone_numbers[2]]);
  await rejected(t, org, () => post(org, body(org, { from_number: org.phone_numbers[2] })), 422, 'call_id_not_verified', 'invalid_request', 'from_number');
});

t.test('per-minute call rate: 429 rate_limited, category account_limit, Retry-After', async (t) => {
  const org = await callOrg(env, { calls_per_minute: 3 });
  for (let i = 0; i < 3; i++) t.equal((await aiCall(env, org, '+14155550001')).status, 202);
  const r = await rejected(t, org, () => aiCall(env, org, '+14155550001'), 429, 'rate_limited', 'account_limit');
  t.ok(Number(r.headers['retry-after']) >= 1, 'Retry-After');
});

t.test('daily spend cap: 402 spend_cap_reached, category account_limit', async (t) => {
  const org = await callOrg(env, { daily_spend_cap_cents: 2 });
  const first = await dial(env, org, '+14155554567');
  t.equal(first.status, 202);
  const c = await settled(env, org, first.body.data.call_id);
  t.equal(c.cost_cents, 2, 'a completed bridge: two answered legs, one started minute each');
  const r = await rejected(t, org, () => dial(env, org, '+14155554567'), 402, 'spend_cap_reached', 'account_limit');
  t.match(r.body.error.message, /2 cents/);
  await setLimits(env.db, org.organization_id, { daily_spend_cap_cents: 3 });
  await rejected(t, org, () => dial(env, org, '+14155554567'), 402, 'spend_cap_reached', 'account_limit'); // 1 cent < a bridge's first minute
  t.equal((await aiCall(env, org, '+14155554567')).status, 202, 'but pays an AI call\'s first minute');
  await setLimits(env.db, org.organization_id, { daily_spend_cap_cents: 5 });
  t.equal((await dial(env, org, '+14155554567')).status, 202, 'a raised cap admits again');
  const zero = await callOrg(env, { daily_spend_cap_cents: 0 });
  await rejected(t, zero, () => dial(env, zero, '+14155554567'), 402, 'spend_cap_reached', 'account_limit');
});

t.test('channel limit: 409 channel_limit_exceeded (account_limit, not a 429); bridge 2 channels, AI 1', async (t) => {
  const org = await callOrg(env, { channel_limit: 3 });
  const b = await dial(env, org, '+14155550008', '+12125550008');
  t.equal(b.status, 202);
  t.equal(await channelsUsed(env, org.organization_id), 2);
  const r = await rejected(t, org, () => dial(env, org, '+14155550008'), 409, 'channel_limit_exceeded', 'account_limit');
  t.match(r.body.error.message, /needs 2 channels; 2 of your 3/);
  const ai = await aiCall(env, org, '+14155550008');
  t.equal(ai.status, 202, 'one channel left for an AI call');
  await rejected(t, org, () => aiCall(env, org, '+14155550008'), 409, 'channel_limit_exceeded', 'account_limit');
  for (const id of [b.body.data.call_id, ai.body.data.call_id]) await env.request('POST', `/v1/calls/${id}/hangup`, { key: org.api_key });
  t.equal(await channelsUsed(env, org.organization_id), 0, 'hangup released them');
  t.equal((await dial(env, org, '+14155554567')).status, 202);
});

t.test('guardrail order: ceiling, destination, caller ID, rate, spend, channels', async (t) => {
  const org = await callOrg(env, { channel_limit: 0, daily_spend_cap_cents: 0, calls_per_minute: 1 });
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['calls:write'], allowedTo: ['+19115550123'] });
  // Everything is wrong at once; each fix reveals the next rule.
  const all = { from_number: '+14155550000', to_number: '+19005550123', connect_number: '+14155559999' };
  await rejected(t, org, () => post(org, all, k.apiKey), 403, 'forbidden', undefined);
  await rejected(t, org, () => post(org, all), 403, 'destination_blocked', 'compliance_block');
  await rejected(t, org, () => post(org, { ...all, to_number: '+14155554567' }), 422, 'call_id_not_verified', 'invalid_request');
  await rejected(t, org, () => post(org, body(org)), 402, 'spend_cap_reached', 'account_limit'); // rate: 1st of 1
  await rejected(t, org, () => post(org, body(org)), 429, 'rate_limited', 'account_limit');
  await setLimits(env.db, org.organization_id, { calls_per_minute: 100, daily_spend_cap_cents: 100 });
  await rejected(t, org, () => post(org, body(org)), 409, 'channel_limit_exceeded', 'account_limit');
});

t.test('scopes: calls:write to place, calls:read to list', async (t) => {
  const org = await callOrg(env);
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['calls:read'] });
  const r = await rejected(t, org, () => post(org, body(org), k.apiKey), 403, 'scope_missing', undefined);
  t.match(r.headers['www-authenticate'], /calls:write/);
});

t.test('POST /v1/calls: deprecated caller_id/destination spelling, agents', async (t) => {
  const org = await callOrg(env);
  const legacy = await env.request('POST', '/v1/calls', { key: org.api_key,
    body: { caller_id: org.from, destination: '+14155554567', agent: { name: 'Max', greeting: 'Hello from Max.' } } });
  t.equal(legacy.status, 202);
  t.match(legacy.headers.deprecation, /^@\d+$/);
  t.match(legacy.headers.sunset, /GMT$/);
  t.match(legacy.headers.link, /rel="sunset"/);
  t.match(legacy.body.data, { status: 'QUEUED', from_number: org.from, to_number: '+14155554567', agent_id: null });

  const modern = await aiCall(env, org, '+14155554567');
  t.equal(modern.status, 202);
  t.notOk(modern.headers.deprecation, 'no Deprecation header on the current spelling');
  t.notOk(modern.headers.sunset);

  const mixed = await env.request('POST', '/v1/calls', { key: org.api_key,
    body: { from_number: org.from, caller_id: org.from, to_number: '+14155554567', agent: { greeting: 'Hi' } } });
  t.equal(mixed.status, 400);
  t.ok(mixed.body.error.fields.caller_id);
  const missing = await env.request('POST', '/v1/calls', { key: org.api_key, body: { caller_id: org.from, agent: { greeting: 'Hi' } } });
  t.equal(missing.body.error.code, 'destination_missing');
  t.ok(missing.body.error.fields.destination, 'errors name the field as it was spelled');

  // A saved agent.
  const agentId = uuidv7();
  await env.db.none(`INSERT INTO agents (id, organization_id, name, greeting, prompt, voice) VALUES ($1, $2, 'Nora', 'Hi, Nora here.', 'Confirm the delivery window. Be brief.', 'warm')`,
    [agentId, org.organization_id]);
  const saved = await env.request('POST', '/v1/calls', { key: org.api_key, body: { from_number: org.from, to_number: '+14155554567', agent_id: agentId } });
  t.equal(saved.status, 202);
  t.equal(saved.body.data.agent_id, agentId);
  const c = await settled(env, org, saved.body.data.call_id);
  t.equal(c.agent_id, agentId);
  const tr = await env.request('GET', `/v1/calls/${c.id}/transcript`, { key: org.api_key });
  t.equal(tr.body.data.turns[0].text, 'Hi, Nora here.', 'the agent speaks its greeting');
  t.match(tr.body.data.turns[2].text, /This is Nora\. Confirm the delivery window\./);

  for (const [b, field] of [
    [{ agent_id: uuidv7() }, 'agent_id'], [{ agent_id: 'x' }, 'agent_id'], [{}, 'agent_id'],
    [{ agent_id: agentId, agent: { greeting: 'Hi' } }, 'agent'], [{ agent: { name: 'No greeting' } }, 'agent.greeting'],
  ] as const) {
    const r = await rejected(t, org, () => env.request('POST', '/v1/calls', { key: org.api_key, body: { from_number: org.from, to_number: '+14155554567', ...b } }),
      400, 'validation_error', undefined, field);
    t.ok(r);
  }
  await env.db.none('UPDATE agents SET deleted_at = now() WHERE id = $1', [agentId]);
  await rejected(t, org, () => env.request('POST', '/v1/calls', { key: org.api_key, body: { from_number: org.from, to_number: '+14155554567', agent_id: agentId } }),
    400, 'validation_error', undefined, 'agent_id');
  const otherOrg = await callOrg(env);
  const foreign = uuidv7();
  await env.db.none(`INSERT INTO agents (id, organization_id, name) VALUES ($1, $2, 'Theirs')`, [foreign, otherOrg.organization_id]);
  await rejected(t, org, () => env.request('POST', '/v1/calls', { key: org.api_key, body: { from_number: org.from, to_number: '+14155554567', agent_id: foreign } }),
    400, 'validation_error', undefined, 'agent_id');
});

t.test('Idempotency-Key replays the accepted dial: one call, one row', async (t) => {
  const org = await callOrg(env);
  const h = { 'idempotency-key': 'dial-1' };
  const a = await post(org, body(org), org.api_key, h);
  const b = await post(org, body(org), org.api_key, h);
  t.equal(a.status, 202);
  t.equal(b.status, 202);
  t.equal(b.headers['idempotency-replay'], 'true');
  t.equal(b.body.data.call_id, a.body.data.call_id);
  t.equal(await rows(org), 1);
});

t.test('admin org limits: sets and prints the limits; bad arguments exit 2 and write nothing', async (t) => {
  const org = await callOrg(env);
  // The first calls go through `npm run --silent admin`; the rest run the same script directly (npm adds ~1 s each).
  let viaNpm = 2;
  const admin = (...args: string[]) => spawnSync(viaNpm-- > 0 ? 'npm' : process.execPath,
    viaNpm >= 0 ? ['run', '--silent', 'admin', '--', ...args] : ['--no-warnings', '--import', 'tsx', 'infra/admin.ts', ...args],
    { cwd: ROOT, env: { ...process.env, ...env.env }, encoding: 'utf8' });
  const show = admin('org', 'limits', '--org', org.organization_id);
  t.equal(show.status, 0, show.stderr);
  t.same(JSON.parse(show.stdout), { organization_id: org.organization_id, channel_limit: 1000, calls_per_minute: 10000,
    daily_spend_cap_cents: 100_000_000, allow_countries: [], max_call_minutes: 60, content_policy: 'standard' });
  const set = admin('org', 'limits', '--org', org.organization_id, '--channels', '4', '--calls-per-minute', '30',
    '--daily-spend-cap-cents', '500', '--allow-countries', 'gb, DE', '--max-call-minutes', '180');
  t.equal(set.status, 0, set.stderr);
  t.equal(set.stdout.trim().split('\n').length, 1, 'one JSON line');
  t.same(JSON.parse(set.stdout), { organization_id: org.organization_id, channel_limit: 4, calls_per_minute: 30,
    daily_spend_cap_cents: 500, allow_countries: ['GB', 'DE'], max_call_minutes: 180, content_policy: 'standard' });
  const before = JSON.parse(admin('org', 'limits', '--org', org.organization_id).stdout);
  for (const bad of [
    ['--channels', '-1'], ['--channels', 'many'], ['--max-call-minutes', '181'], ['--max-call-minutes', '0'],
    ['--calls-per-minute', '0'], ['--allow-countries', 'GBR'], ['--content-policy', 'strict'], ['--channels', '5', '--bogus', '1'],
    ['--channels', '5', '--max-call-minutes', '999'],
  ]) {
    const r = admin('org', 'limits', '--org', org.organization_id, ...bad);
    t.equal(r.status, 2, `exit 2 for ${bad.join(' ')}`);
    t.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    t.equal(r.stdout, '');
  }
  t.equal(admin('org', 'limits').status, 2, '--org is required');
  t.equal(admin('org', 'limits', '--org', uuidv7()).status, 2, 'unknown organization');
  t.same(JSON.parse(admin('org', 'limits', '--org', org.organization_id).stdout), before, 'nothing was written');
  const cleared = JSON.parse(admin('org', 'limits', '--org', org.organization_id, '--allow-countries', 'none', '--content-policy', 'hipaa').stdout);
  t.same(cleared.allow_countries, []);
  t.equal(cleared.content_policy, 'hipaa');

  const num = admin('number', 'limits', '--org', org.organization_id, '--number', org.from, '--max-call-minutes', '120');
  t.equal(num.status, 0, num.stderr);
  t.match(JSON.parse(num.stdout), { phone_number: org.from, max_call_minutes: 120 });
  t.equal(admin('number', 'limits', '--org', org.organization_id, '--number', '+14155550000', '--max-call-minutes', '5').status, 2);
  t.equal(admin('number', 'limits', '--org', org.organization_id, '--number', org.from, '--max-call-minutes', '200').status, 2);
  t.match(JSON.parse(admin('number', 'limits', '--org', org.organization_id, '--number', org.from, '--max-call-minutes', 'default').stdout),
    { max_call_minutes: null });
});
