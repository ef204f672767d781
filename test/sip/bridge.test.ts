// Bridge calls (path C) over the SIP trunk, SIPp playing it: the staff phone answers, then the called party is
// dialed showing from_number and nothing of connect_number (read from the INVITE SIPp received); both answer and
// play a tone, and media carries each one's RTP to the other. Hang-ups in each state, digest answers to 401 and 407,
// and the carrier contract (a repeated command is a no-op; a hang-up that overtakes its originate dials nothing).
import t from 'tap';
import { CARRIER_EVENTS_QUEUE, legId, sequencedEventJobId } from '../../shared/carriers/carrier.ts';
import { QueueRegistry } from '../../shared/queues/registry.ts';
import { SipCarrier } from '../../shared/carriers/sip.ts';
import { keyer } from '../../shared/redis.ts';
import { deliveriesFor, dial } from '../calls/helpers.ts';
import { eventually } from '../helpers/env.ts';
import { endedCall, legStatus, requestsTo, sipPlatform, sipSkip, startSipp, TRUNK_CREDENTIALS } from './helpers.ts';

if (sipSkip) {
  t.plan(0, `skip: ${sipSkip}`);
} else {
  const sipp = await startSipp(t);
  const p = await sipPlatform(t, sipp.port, TRUNK_CREDENTIALS);
  const hangup = (id: string) => p.env.request('POST', `/v1/calls/${id}/hangup`, { key: p.org.api_key });

  t.test('both legs answer: the destination sees only from_number, audio crosses the bridge, the API hangs up', async (t) => {
    const connect = '+14155553001';
    const to = '+12125553002';
    const r = await dial(p.env, p.org, to, connect);
    t.equal(r.status, 202, r.text);
    const id = r.body.data.call_id;
    await legStatus(p, id, 'destination', 'ANSWERED');

    const invite = (await eventually(async () => requestsTo(sipp, to).INVITE?.[0]))!;
    const line = (name: string) => new RegExp(`^${name}:.*$`, 'im').exec(invite)?.[0] ?? '';
    t.match(invite, new RegExp(`^INVITE sip:\\${to}@127\\.0\\.0\\.1:${sipp.port} SIP/2\\.0`), 'Request-URI: the called party');
    t.match(line('From'), `<sip:${p.org.from}@`, 'From: from_number');
    t.match(line('P-Asserted-Identity'), `<sip:${p.org.from}@`, 'P-Asserted-Identity: from_number');
    t.match(line('To'), `<sip:${to}@`);
    for (const form of [connect, connect.slice(1), connect.slice(2)]) t.notOk(invite.includes(form), `nothing of connect_number (${form}) anywhere in the INVITE`);
    t.notMatch(invite, /^(Remote-Party-ID|Diversion):/im, 'no Remote-Party-ID or Diversion');
    t.match(invite, /^o=- \d+ \d+ IN IP4 /m, 'SDP o= names no one');
    t.match(invite, /^s=-\r?$/m, 'SDP s= is "-"');
    t.match(invite, /^m=audio \d+ RTP\/AVP 0 8 101\r?$/m, 'offer: PCMU, PCMA, telephone-event');
    t.match(invite, /^a=rtpmap:101 telephone-event\/8000\r?$/m);

    // Each SIPp leg plays a tone: both relays carry RTP both ways once the legs are bridged.
    const stats = await eventually(async () => {
      const s = await p.media.stats(id);
      return s.carrierLegs.length === 2 && s.carrierLegs.every((l) => l.fromFarEnd >= 50 && l.toFarEnd >= 50) ? s : null;
    }, 60_000, 250);
    for (const l of stats.carrierLegs) {
      t.ok(l.fromFarEnd >= 50 && l.toFarEnd >= 50, `${l.legId}: ${l.fromFarEnd} packets from its far end, ${l.toFarEnd} to it`);
      t.equal(l.codec, 'audio/PCMU');
    }

    const h = await hangup(id);
    t.equal(h.status, 200);
    t.equal(h.body.data.result, 'ended');
    const c = await endedCall(p, id);
    t.equal(c.status, 'COMPLETED');
    t.equal(c.disconnection_reason, 'api_hangup');
    t.same(c.legs.map((l: any) => l.end_reason), ['local_hangup', 'local_hangup']);
    await eventually(async () => requestsTo(sipp, connect).BYE?.length === 1 && requestsTo(sipp, to).BYE?.length === 1, 20_000);
    t.pass('each leg got one BYE');
    await eventually(async () => (await p.media.listSessions()).sessions.every((s) => s.callId !== id), 20_000);
    t.pass('the media session closed with the call');
    await p.rx.waitFor(() => (deliveriesFor(p.rx, id).call_completed?.length ?? 0) === 1, 30_000);
    t.equal(deliveriesFor(p.rx, id).call_completed[0].body.data.status, 'COMPLETED', 'call_completed webhook');
  });

  t.test('hangup while the staff phone rings: CANCEL, once', async (t) => {
    const connect = '+16175550002';
    const r = await dial(p.env, p.org, '+12125553004', connect);
    const id = r.body.data.call_id;
    await legStatus(p, id, 'connect', 'RINGING');
    const h = await hangup(id);
    t.equal(h.body.data.result, 'canceled');
    const again = await hangup(id);
    t.equal(again.body.data.result, 'already_ended', 'a second hangup changes nothing');
    const c = await endedCall(p, id);
    t.equal(c.status, 'CANCELED');
    t.equal(c.call_outcome, 'canceled');
    t.same(c.legs.map((l: any) => [l.role, l.end_reason]), [['connect', 'local_hangup'], ['destination', null]]);
    await eventually(async () => requestsTo(sipp, connect).ACK?.length === 1, 20_000); // the 487 after our CANCEL
    t.equal(requestsTo(sipp, connect).CANCEL?.length, 1, 'one CANCEL');
    t.notOk(requestsTo(sipp, connect).BYE, 'no BYE for a call never answered');
  });

  t.test('digest: 401 and 407 are answered once with SIP_TRUNK_USERNAME / SIP_TRUNK_PASSWORD', async (t) => {
    for (const [connect, header, to] of [['+14155550020', 'Authorization', '+12125553020'], ['+14155550021', 'Proxy-Authorization', '+12125553021']]) {
      const r = await dial(p.env, p.org, to, connect);
      const c = await endedCall(p, r.body.data.call_id);
      t.equal(c.status, 'COMPLETED', `${header}: the challenged leg was answered`);
      t.equal(c.disconnection_reason, 'connect_hangup', `${header}: the staff phone hung up (trunk.xml's far-end BYE)`);
      const invites = requestsTo(sipp, connect).INVITE ?? [];
      t.equal(invites.length, 2, `${header}: the INVITE, then once more with credentials`);
      const auth = new RegExp(`^${header}:.*$`, 'im').exec(invites[1])?.[0] ?? '';
      t.match(auth, /Digest /);
      t.match(auth, /username="trunkuser"/);
      t.match(auth, /realm="openline\.test"/);
      t.match(auth, /qop=auth/);
      t.match(auth, /nc=00000001/);
      t.notOk(invites[0].includes(`${header}:`), `${header}: not sent before the challenge`);
      t.match(invites[1], /^CSeq: 2 INVITE/m, 'the retry is a new transaction of the same dialog');
    }
  });

  t.test('the carrier contract: repeated commands are no-ops; a hang-up before its originate dials nothing', async (t) => {
    const queues = new QueueRegistry(p.env.redis, p.env.config.redisPrefix);
    const events = queues.get(CARRIER_EVENTS_QUEUE);
    const carrier = new SipCarrier(p.env.redis, keyer(p.env.config.redisPrefix), queues, p.env.config.sip!);
    t.teardown(() => queues.close());
    const callId = '01a20000-0000-7000-8000-000000000021';
    const number = '+13125550002'; // rings until CANCEL
    const leg = { callId, role: 'connect' as const, legId: legId(callId, 'connect'), number };
    const req = { ...leg, from: p.org.from, ringTimeoutSeconds: 30, maxDurationSeconds: 60, record: false };
    await carrier.originate(req);
    await carrier.originate(req);
    await eventually(async () => requestsTo(sipp, number).INVITE?.length === 1);
    await carrier.hangup(leg);
    await carrier.hangup(leg);
    await eventually(async () => requestsTo(sipp, number).ACK?.length === 1, 20_000);
    t.equal(requestsTo(sipp, number).INVITE?.length, 1, 'one INVITE for two originates');
    t.equal(requestsTo(sipp, number).CANCEL?.length, 1, 'one CANCEL for two hangups');
    const ended = await eventually(async () => events.getJob(sequencedEventJobId(leg.legId, 1)));
    t.match(ended.data, { kind: 'ended', reason: 'local_hangup', legId: leg.legId, seq: 1 }, 'the leg ended local_hangup, event 1');

    const never = { ...leg, role: 'destination' as const, legId: legId(callId, 'destination'), number: '+13125553005' };
    await carrier.hangup(never);
    await carrier.originate({ ...req, ...never });
    const tomb = await eventually(async () => events.getJob(sequencedEventJobId(never.legId, 1)));
    t.match(tomb.data, { kind: 'ended', reason: 'local_hangup' }, 'hung up before it was dialed: ended local_hangup');
    // An INVITE would have reached SIPp by the time a call placed after it did.
    const later = await dial(p.env, p.org, '+12125553006', '+14155559486');
    await endedCall(p, later.body.data.call_id);
    t.notOk(requestsTo(sipp, never.number).INVITE, 'the late originate dialed nothing');
  });
}
