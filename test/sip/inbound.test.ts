// Inbound calls over the SIP trunk carrier (signaling/sip/inbound.ts, inbound-leg.ts, signaling/incoming.ts): SIPp
// plays the caller on the trunk's address (test/fixtures/sip/inbound-caller.xml, inbound-cancel.xml), browsers are tap
// WebSocket clients listening with a client token. Real gateway, workers, signaling, media, PostgreSQL and Redis.
import t from 'tap';
import { channelsUsed, deliveriesFor } from '../calls/helpers.ts';
import { setLimits } from '../../shared/calls/limits.ts';
import { eventually } from '../helpers/env.ts';
import { Phone, softphoneUrl } from '../signaling/softphone.ts';
import { endedCall, freePort, sipPlatform, sippCaller, sipSkip } from './helpers.ts';

if (sipSkip) {
  t.plan(0, `skip: ${sipSkip}`);
} else {
  const SECRET = 'c'.repeat(16) + 'inbound-client-token-secret';
  // Nothing listens at the trunk's URI: these tests only receive calls.
  const p = await sipPlatform(t, await freePort(), { CLIENT_TOKEN_SECRET: SECRET, SIP_INBOUND_RING_SECONDS: '4' });
  const number = p.org.from;
  const url = softphoneUrl(p.signaling);
  const rows = async () => (await p.env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [p.org.organization_id])).n as number;
  const setInbound = (inbound: string, key = p.org.api_key, id?: number) => phoneId().then((pid) =>
    p.env.request('PATCH', `/v1/phone-numbers/${id ?? pid}`, { key, body: { inbound } }));
  const phoneId = async () => (await p.env.db.one('SELECT id FROM phone_numbers WHERE phone_number = $1', [number])).id as number;

  const caller = (o: { to: string; ip?: string; scenario?: string }) => sippCaller(t, p.sipPort, o);
  const finalStatus = (log: string) => [...log.matchAll(/^SIP\/2\.0 ([2-6]\d\d) /gm)].map((m) => Number(m[1])).filter((s) => s >= 200)[0];

  async function listener(token: string): Promise<Phone> {
    const ph = await Phone.connect(url);
    t.teardown(() => ph.close());
    ph.send({ type: 'hello', v: 1, client_token: token });
    await ph.frame('listening');
    return ph;
  }
  const mint = async () => {
    const r = await p.env.request('POST', '/v1/client-tokens', { key: p.org.api_key, body: { from_numbers: [number] } });
    if (r.status !== 201) throw new Error(`mint: ${r.status} ${r.text}`);
    return r.body.data.token as string;
  };
  const inboundCalls = () => p.env.db.any('SELECT * FROM calls WHERE organization_id = $1 AND direction = \'inbound\' ORDER BY id', [p.org.organization_id]);

  t.test('the inbound setting: default softphone, PATCH sets it; another organization\'s key and a key without the scope get nothing', async (t) => {
    const id = await phoneId();
    let r = await p.env.request('GET', `/v1/phone-numbers/${id}`, { key: p.org.api_key });
    t.equal(r.body.data.inbound, 'softphone', 'default softphone');
    r = await setInbound('voicemail');
    t.equal(r.status, 400); t.equal(r.body.error.code, 'validation_error'); t.ok(r.body.error.fields?.inbound, 'names the field');
    const other = await p.env.bootstrap({ numbers: 1 });
    r = await setInbound('reject', other.api_key);
    t.equal(r.status, 404, 'another organization\'s number is not found');
    const readOnly = await p.env.createKey({ organizationId: p.org.organization_id, userId: p.org.user_id, scopes: ['phone_numbers:read'] });
    r = await setInbound('reject', readOnly.apiKey);
    t.equal(r.status, 403); t.equal(r.body.error.code, 'scope_missing');
    t.equal((await p.env.request('GET', `/v1/phone-numbers/${id}`, { key: p.org.api_key })).body.data.inbound, 'softphone', 'unchanged');
    r = await setInbound('reject');
    t.equal(r.status, 200); t.equal(r.body.data.inbound, 'reject');
    r = await setInbound('softphone');
    t.equal(r.body.data.inbound, 'softphone');
  });

  t.test('refusals write nothing: unknown number 404, outside SIP_TRUNK_ALLOW 403, reject 480, limits 486 / 480', async (t) => {
    const before = await rows();
    // Outside the sandbox inventory's 555 exchange, so no bootstrapped organization can hold it.
    let c = await caller({ to: '+14155019876' });
    t.equal(finalStatus(c.log), 404, 'a number nobody holds: 404');
    c = await caller({ to: number, ip: '127.0.0.9' });
    t.equal(finalStatus(c.log), 403, 'from 127.0.0.9 (outside SIP_TRUNK_ALLOW): 403');
    await setInbound('reject');
    c = await caller({ to: number });
    t.equal(finalStatus(c.log), 480, 'inbound reject: 480');
    await setInbound('softphone');
    await setLimits(p.env.db, p.org.organization_id, { channel_limit: 0 });
    c = await caller({ to: number });
    t.equal(finalStatus(c.log), 486, 'no channel free: 486');
    await setLimits(p.env.db, p.org.organization_id, { channel_limit: 1000, daily_spend_cap_cents: 0 });
    c = await caller({ to: number });
    t.equal(finalStatus(c.log), 480, 'the daily spend cap has no room: 480');
    await setLimits(p.env.db, p.org.organization_id, { daily_spend_cap_cents: 100_000_000 });
    t.equal(await rows(), before, 'no call rows');
    t.equal(await channelsUsed(p.env, p.org.organization_id), 0, 'no channel held');
  });

  t.test('softphone: two browsers ring, the first to accept takes the call, the other stops; hangup from the browser', async (t) => {
    const a = await listener(await mint());
    const b = await listener(await mint());
    const done = caller({ to: number });
    const inc = await a.frame('incoming', 30_000);
    const incB = await b.frame('incoming', 30_000);
    t.equal(inc.call_id, incB.call_id, 'both rang for the same call');
    t.equal(inc.to_number, number); t.equal(inc.from_number, '+12125550187');
    const row = await p.env.db.one('SELECT * FROM calls WHERE id = $1', [inc.call_id]);
    t.match(row, { type: 'inbound', direction: 'inbound', status: 'RINGING', to_number: number, from_number: '+12125550187', carrier: 'sip' });
    t.equal(await channelsUsed(p.env, p.org.organization_id), 1, 'one channel while it rings');
    a.send({ type: 'accept', call_id: inc.call_id });
    const welcome = await a.frame('welcome');
    t.match(welcome, { call_id: inc.call_id, path: 'inbound' });
    const stopped = await b.frame('incoming_stopped');
    t.match(stopped, { call_id: inc.call_id, reason: 'answered_elsewhere' });
    await a.frame('answered', 30_000);
    b.send({ type: 'accept', call_id: inc.call_id });
    t.match(await eventually(async () => b.frames.filter((f) => f.type === 'incoming_stopped')[1]), { reason: 'ended' }, 'a late accept gets nothing');
    a.send({ type: 'hangup' });
    const ended = await a.frame('ended', 30_000);
    t.match(ended, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'api_hangup' });
    const c = await done;
    t.equal(finalStatus(c.log), 200, 'the caller was answered');
    t.match(c.log, /^BYE sip:/m, 'the platform sent BYE to the caller');
    const call = await endedCall(p, inc.call_id);
    t.match(call, { status: 'COMPLETED', direction: 'inbound', picked_up: true });
    await eventually(async () => (await channelsUsed(p.env, p.org.organization_id)) === 0);
    const d = await eventually(async () => { const x = deliveriesFor(p.rx, inc.call_id); return x.new_call && x.call_completed ? x : null; }, 30_000);
    t.ok(d.new_call && d.call_completed, 'new_call and call_completed webhooks');
    t.ok(b.closed === null, 'the other browser still listens');
  });

  t.test('a browser that listens while a call rings is rung too; decline stops it on that socket only', async (t) => {
    const a = await listener(await mint());
    const done = caller({ to: number });
    const inc = await a.frame('incoming', 30_000);
    // b starts listening after the ring went out: it is rung for the call already ringing.
    const b = await listener(await mint());
    const late = await b.frame('incoming', 10_000);
    t.match(late, { call_id: inc.call_id, from_number: '+12125550187', to_number: number });
    t.ok(late.ring_timeout_seconds >= 1 && late.ring_timeout_seconds <= 4, `the ring time left (${late.ring_timeout_seconds} s)`);
    t.ok(b.types().indexOf('listening') < b.types().indexOf('incoming'), 'listening first, then incoming');
    b.send({ type: 'decline', call_id: inc.call_id });
    t.match(await b.frame('incoming_stopped'), { call_id: inc.call_id, reason: 'declined' }, 'declined on b');
    b.send({ type: 'accept', call_id: inc.call_id });
    t.match(await b.frame('error'), { code: 'bad_message' }, 'b cannot accept a call it declined');
    t.ok(b.closed === null, 'b still listens');
    t.notOk(a.frames.some((f) => f.type === 'incoming_stopped'), 'a still rings');
    a.send({ type: 'accept', call_id: inc.call_id });
    t.match(await a.frame('welcome'), { call_id: inc.call_id, path: 'inbound' });
    await a.frame('answered', 30_000);
    t.equal(b.frames.filter((f) => f.type === 'incoming_stopped').length, 1, 'b, which declined, hears nothing more of it');
    a.send({ type: 'hangup' });
    await a.frame('ended', 30_000);
    t.equal(finalStatus((await done).log), 200, 'the caller was answered');
    await endedCall(p, inc.call_id);
    // A call that stopped ringing before the browser listened does not ring it.
    const c = await listener(await mint());
    await new Promise((r) => setTimeout(r, 300));
    t.notOk(c.frames.some((f) => f.type === 'incoming'), 'an ended call does not ring a new listener');
  });

  t.test('nobody answers within the ring timeout: 480, NO_ANSWER, call_no_answer', async (t) => {
    const a = await listener(await mint());
    const done = caller({ to: number });
    const inc = await a.frame('incoming', 30_000);
    const c = await done;
    t.equal(finalStatus(c.log), 480, 'the caller got 480');
    t.match(await a.frame('incoming_stopped'), { call_id: inc.call_id, reason: 'ended' });
    const call = await endedCall(p, inc.call_id);
    t.match(call, { status: 'NO_ANSWER', failure_code: 'no_answer' });
    await eventually(async () => deliveriesFor(p.rx, inc.call_id).call_no_answer, 30_000);
    t.pass('call_no_answer delivered');
    await eventually(async () => (await channelsUsed(p.env, p.org.organization_id)) === 0);
  });

  t.test('the caller hangs up while it rings: 487, the call ends CANCELED', async (t) => {
    const a = await listener(await mint());
    const done = caller({ to: number, scenario: 'inbound-cancel.xml' });
    const inc = await a.frame('incoming', 30_000);
    const c = await done;
    t.equal(c.code, 0, 'SIPp saw 200 to its CANCEL and 487 to its INVITE');
    t.match(await a.frame('incoming_stopped'), { call_id: inc.call_id, reason: 'ended' });
    const call = await endedCall(p, inc.call_id);
    t.match(call, { status: 'CANCELED', disconnection_reason: 'remote_hangup', picked_up: false });
    await eventually(async () => (await channelsUsed(p.env, p.org.organization_id)) === 0);
    t.equal((await inboundCalls()).filter((r) => r.ended_at === null).length, 0, 'no inbound call left live');
  });

  t.test('a caller that never acknowledges our 200 OK: retransmitted for 64 x T1, then BYE; the call ends, channels freed', async (t) => {
    const a = await listener(await mint());
    const done = caller({ to: number, scenario: 'inbound-no-ack.xml' });
    const inc = await a.frame('incoming', 30_000);
    a.send({ type: 'accept', call_id: inc.call_id });
    await a.frame('answered', 30_000);
    const c = await done; // SIPp exits once it answered our BYE (its INVITE got no ACK from it)
    t.equal(c.code, 0, 'SIPp received the 200 OK, then a BYE, and answered it');
    const oks = [...c.log.matchAll(/^SIP\/2\.0 200 OK/gm)].length;
    t.ok(oks >= 5, `the 200 OK was retransmitted while no ACK came (${oks} copies received)`);
    t.match(c.log, /^BYE sip:/m, 'the platform sent BYE');
    const ended = await a.frame('ended', 60_000);
    t.equal(ended.call_id ?? inc.call_id, inc.call_id);
    const call = await endedCall(p, inc.call_id);
    t.ok(call.ended_at, 'the call ended');
    t.equal(call.legs.find((l: { role: string }) => l.role === 'destination')?.end_reason, 'carrier_rejected', 'the caller\'s leg ended carrier_rejected');
    await eventually(async () => (await channelsUsed(p.env, p.org.organization_id)) === 0);
    t.equal((await inboundCalls()).filter((r) => r.ended_at === null).length, 0, 'no inbound call left live');
  });
}
