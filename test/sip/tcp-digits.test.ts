// The trunk over TCP (SIP_TRUNK_URI ...;transport=tcp) with numbers as digits (SIP_USER_FORMAT=digits): SIPp in TCP
// mode; a bridge that both ends answer and the far end hangs up, and a busy leg (its non-2xx ACK over TCP). A TCP trunk
// that refuses the connection fails the leg at once (carrier_rejected), not after Timer B.
import t from 'tap';
import { dial } from '../calls/helpers.ts';
import { endedCall, freePort, requestsTo, sipPlatform, sipSkip, startSipp } from './helpers.ts';

if (sipSkip) {
  t.plan(0, `skip: ${sipSkip}`);
} else {
  const sipp = await startSipp(t, { transport: 'tcp' });
  const p = await sipPlatform(t, sipp.port, { SIP_TRUNK_URI: `sip:127.0.0.1:${sipp.port};transport=tcp`, SIP_USER_FORMAT: 'digits' });

  t.test('a bridge over TCP, numbers as digits', async (t) => {
    const connect = '+14155555001';
    const to = '+12125550007';
    const r = await dial(p.env, p.org, to, connect);
    const c = await endedCall(p, r.body.data.call_id);
    t.equal(c.status, 'COMPLETED');
    t.equal(c.disconnection_reason, 'remote_hangup', 'the called party hung up (its BYE came over the TCP connection)');
    const invite = requestsTo(sipp, to.slice(1)).INVITE?.[0] ?? '';
    t.match(invite, new RegExp(`^INVITE sip:${to.slice(1)}@127\\.0\\.0\\.1:${sipp.port};transport=tcp SIP/2\\.0`), 'Request-URI: digits, over TCP');
    t.match(invite, new RegExp(`^From: .*<sip:${p.org.from.slice(1)}@`, 'm'), 'From: from_number as digits');
    t.match(invite, /^Via: SIP\/2\.0\/TCP /m);
    t.match(sipp.messages(), /^TCP message received/m, 'SIPp received over TCP');
    t.equal(requestsTo(sipp, connect.slice(1)).BYE?.length, 1, 'the staff phone got our BYE');
  });

  t.test('a busy leg over TCP: the 486 is acknowledged on the connection', async (t) => {
    const r = await dial(p.env, p.org, '+12125555002', '+14155559486');
    const c = await endedCall(p, r.body.data.call_id);
    t.equal(c.status, 'BUSY');
    t.equal(c.failure_code, 'busy');
    t.equal(requestsTo(sipp, '14155559486').ACK?.length, 1);
  });

  t.test('a TCP trunk that refuses connections: the leg ends carrier_rejected at once, not after Timer B', async (t) => {
    const closed = await freePort();
    const q = await sipPlatform(t, closed, { SIP_TRUNK_URI: `sip:127.0.0.1:${closed};transport=tcp` });
    const r = await dial(q.env, q.org, '+12125555003', '+14155555004');
    t.equal(r.status, 202, r.text);
    const c = await endedCall(q, r.body.data.call_id);
    t.match(c, { status: 'FAILED', failure_code: 'carrier_rejected', picked_up: false });
    const took = Date.parse(c.ended_at) - Date.parse(c.created_at);
    t.ok(took < 20_000, `ended ${took} ms after it was placed (Timer B would be 32 s)`);
    t.match(q.signaling.output, /SIP TCP connection failed/, 'signaling says why');
  });
}
