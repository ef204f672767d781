// Inbound SMS through the sandbox endpoint: contact_replied, STOP/START/HELP with their automatic replies, the
// opt-out refusing sends, and a send racing a STOP.
import t from 'tap';
import { OPTED_OUT_ERROR } from '../../shared/sms/send.ts';
import { eventually } from '../helpers/env.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { deliveries, getMessage, send, smsEnv, subscribe, textingOrg, waitMessage } from './helpers.ts';

const { env } = await smsEnv(t, { SMS_NUMBER_RATE_PER_SECOND: '1000' });
const rx = await startReceiver(t);
const org = await textingOrg(env, { org: 'Acme Dental' });
await subscribe(env, rx, org);
const other = await textingOrg(env, { org: 'Other Co' });

const inbound = (from: string, body: string, o = org, to = o.from) =>
  env.request('POST', '/v1/sandbox/sms/inbound', { key: o.api_key, body: { from_number: from, to_number: to, body } });
const liveOptOut = (n: string, orgId = org.organization_id) => env.db.oneOrNone(
  `SELECT * FROM opt_outs WHERE organization_id = $1 AND phone_number = $2 AND channel = 'sms' AND revoked_at IS NULL`, [orgId, n]);

t.test('a plain reply: stored, contact_replied, no keyword, no automatic reply', async (t) => {
  const r = await inbound('+12125550140', 'Yes, 10 AM works for me');
  t.equal(r.status, 201, r.text);
  t.match(r.body.data, { keyword: null, reply: null });
  const m = r.body.data.message;
  t.match(m, { direction: 'inbound', status: 'received', phone_number: '+12125550140', from_number: '+12125550140', to_number: org.from,
    body: 'Yes, 10 AM works for me', channel: 'sms' });
  t.same(await getMessage(env, org, m.id), m, 'readable like any message');
  const ev = await eventually(async () => deliveries(rx, 'contact_replied', m.id)[0], 60_000);
  t.same(ev.data, { id: m.id, phone_number: '+12125550140', from_number: '+12125550140', to_number: org.from, body: 'Yes, 10 AM works for me', body_withheld: false,
    direction: 'inbound', status: 'received', keyword: null, channel: 'sms', created_at: m.created_at });
  const list = await env.request('GET', '/v1/sms/messages?direction=inbound', { key: org.api_key });
  t.same(list.body.data.map((x: any) => x.id), [m.id]);
});

t.test('STOP, HELP, START round trip with automatic replies', async (t) => {
  const R = '+12125550141';
  const first = await send(env, org, R, 'Reminder: cleaning tomorrow. Reply STOP to opt out.');
  t.equal(first.status, 202);
  await waitMessage(env, org, first.body.data.id, ['delivered']);

  const stop = await inbound(R, '  stop ');
  t.equal(stop.status, 201);
  t.equal(stop.body.data.keyword, 'stop');
  const reply = stop.body.data.reply;
  t.match(reply, { direction: 'outbound', status: 'queued', from_number: org.from, to_number: R, auto_reply_to: stop.body.data.message.id });
  t.match(reply.body, /Acme Dental: You are unsubscribed.*Reply START/);
  t.match(await liveOptOut(R), { source: 'sms_keyword:STOP' }, 'opted out (opt_outs, channel sms)');
  t.match(await waitMessage(env, org, reply.id, ['delivered', 'failed']), { status: 'delivered' }, 'the STOP confirmation is sent although opted out');
  const replied = await eventually(async () => deliveries(rx, 'contact_replied', stop.body.data.message.id)[0], 60_000);
  t.equal(replied.data.keyword, 'stop');

  const refused = await send(env, org, R);
  t.equal(refused.status, 403);
  t.equal(refused.body.error.code, 'recipient_opted_out');
  t.equal(refused.body.error.category, 'compliance_block');
  t.match(refused.body.error.fields, { to_number: /opted out/ });
  t.equal((await send(env, other, R, 'Other Co here. Reply STOP to opt out.')).status, 202, 'the opt-out is per organization');

  const help = await inbound(R, 'Help');
  t.equal(help.body.data.keyword, 'help');
  t.match(help.body.data.reply.body, /Acme Dental: Reply STOP to unsubscribe/);
  t.ok(await liveOptOut(R), 'HELP changes nothing');
  t.match(await waitMessage(env, org, help.body.data.reply.id, ['delivered', 'failed']), { status: 'delivered' });

  const start = await inbound(R, 'START');
  t.equal(start.body.data.keyword, 'start');
  t.match(start.body.data.reply.body, /resubscribed/);
  t.equal(await liveOptOut(R), null, 'opted back in');
  const revoked = await env.db.one(`SELECT count(*)::int AS n FROM opt_outs WHERE phone_number = $1 AND revoked_at IS NOT NULL`, [R]);
  t.equal(revoked.n, 1, 'the opt-out is kept, revoked');
  t.match(await waitMessage(env, org, start.body.data.reply.id, ['delivered', 'failed']), { status: 'delivered' });
  const again = await send(env, org, R, 'Welcome back. Reply STOP to opt out.');
  t.equal(again.status, 202);
  t.match(await waitMessage(env, org, again.body.data.id, ['delivered', 'failed']), { status: 'delivered' });

  const autos = await env.request('GET', `/v1/sms/messages?phone_number=${encodeURIComponent(R)}&direction=outbound&order=asc&limit=100`, { key: org.api_key });
  t.equal(autos.body.data.filter((m: any) => m.auto_reply_to !== null).length, 3, 'three automatic replies recorded as outbound messages');
});

t.test('every opt-out keyword, any case, trimmed; UNSTOP opts back in', async (t) => {
  for (const [i, word] of ['UNSUBSCRIBE', 'cancel', ' End', 'quit\n', 'Stop'].entries()) {
    const R = `+1212555016${i}`;
    const r = await inbound(R, word);
    t.equal(r.body.data.keyword, 'stop', JSON.stringify(word));
    t.ok(await liveOptOut(R), `${JSON.stringify(word)} opts out`);
    t.equal((await inbound(R, 'unstop')).body.data.keyword, 'start');
    t.equal(await liveOptOut(R), null, 'UNSTOP opts back in');
  }
  const twice = await inbound('+12125550170', 'STOP');
  await inbound('+12125550170', 'stop');
  t.equal((await env.db.one(`SELECT count(*)::int AS n FROM opt_outs WHERE phone_number = '+12125550170'`)).n, 1, 'one live row');
  t.ok(twice.body.data.reply);
  t.equal((await inbound('+12125550171', 'stop please')).body.data.keyword, null, 'only a bare keyword acts');
  t.equal(await liveOptOut('+12125550171'), null);
});

t.test('START from a number that is not opted out changes nothing and is still answered', async (t) => {
  const R = '+12125550172';
  const r = await inbound(R, 'START');
  t.equal(r.status, 201, r.text);
  t.equal(r.body.data.keyword, 'start');
  t.match(r.body.data.reply.body, /resubscribed/);
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM opt_outs WHERE phone_number = $1', [R])).n, 0, 'no opt-out written');
});

t.test('inbound validation, tenancy and scopes', async (t) => {
  const before = (await env.db.one('SELECT count(*)::int AS n FROM sms_messages')).n;
  const notOurs = await inbound('+12125550150', 'hi', org, other.from);
  t.equal(notOurs.status, 400, 'another organization\'s number');
  t.match(notOurs.body.error.fields, { to_number: 'is not an active number of your organization' });
  const bad = await env.request('POST', '/v1/sandbox/sms/inbound', { key: org.api_key, body: { from_number: 'x', to_number: org.from, body: '' } });
  t.equal(bad.status, 400);
  t.match(bad.body.error.fields, { body: String });
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM sms_messages')).n, before, 'nothing written');
  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['sms:read'] });
  const r = await env.request('POST', '/v1/sandbox/sms/inbound', { key: ro.apiKey, body: { from_number: '+12125550150', to_number: org.from, body: 'hi' } });
  t.equal(r.status, 403);
  t.equal(r.body.error.code, 'scope_missing');
});

t.test('a send racing a STOP is never handed over after the opt-out committed', async (t) => {
  const R = '+12125550180';
  const ids: string[] = [];
  const burst = async (n: number) => {
    const rs = await Promise.all(Array.from({ length: n }, (_, i) => send(env, org, R, `Flash sale ${i}! Reply STOP to opt out.`)));
    for (const r of rs) if (r.status === 202) ids.push(r.body.data.id);
    return rs;
  };
  await burst(30);
  const [, stop] = await Promise.all([burst(30), inbound(R, 'STOP')]);
  t.equal(stop.status, 201);
  const after = await burst(5);
  t.ok(after.every((r) => r.status === 403 && r.body.error.code === 'recipient_opted_out'), 'sends after the STOP are refused at once');

  const optOut = await env.db.one(`SELECT created_at FROM opt_outs WHERE organization_id = $1 AND phone_number = $2 AND revoked_at IS NULL`,
    [org.organization_id, R]);
  const rows = await eventually(async () => {
    const rs = await env.db.any('SELECT * FROM sms_messages WHERE id IN ($1:csv)', [ids]);
    return rs.every((m) => ['delivered', 'failed'].includes(m.status)) ? rs : null;
  }, 120_000, 200).catch(async (err) => {
    t.comment(JSON.stringify(await env.db.any('SELECT status, count(*) FROM sms_messages WHERE id IN ($1:csv) GROUP BY 1', [ids])));
    throw err;
  });
  const handedOver = rows.filter((m) => m.sent_at !== null);
  const withheld = rows.filter((m) => m.sent_at === null);
  t.comment(`${ids.length} accepted: ${handedOver.length} handed over before the STOP, ${withheld.length} withheld`);
  t.ok(handedOver.every((m) => m.sent_at < optOut.created_at), 'every hand-over happened before the opt-out committed');
  t.ok(withheld.every((m) => m.status === 'failed' && m.error_message === OPTED_OUT_ERROR), 'the rest failed as opted out');
  t.equal(handedOver.length + withheld.length, ids.length);
  t.ok(withheld.length > 0, 'the STOP withheld queued messages');
});
