// Every outcome of an outbound SIP leg against SIPp playing the trunk (test/fixtures/sip/trunk.xml picks its answer
// from the dialed number): the final-response table, the ring timeout (CANCEL), no answer at all (Timer B, with the
// INVITE's UDP retransmissions), an answer whose RTP address is outside SIP_TRUNK_ALLOW or whose SDP is unusable
// (ACK, then BYE), a 401 without credentials, a far-end BYE, and a failing destination leg of a bridge. Each call's
// record, its webhooks and what SIPp received.
import t, { type Test } from 'tap';
import { deliveriesFor, dial, DISPOSITIONS } from '../calls/helpers.ts';
import { eventually } from '../helpers/env.ts';
import { endedCall, legStatus, requestsTo, sipCallIdOf, sipPlatform, sipSkip, startSipp, type SipPlatform } from './helpers.ts';

if (sipSkip) {
  t.plan(0, `skip: ${sipSkip}`);
} else {
  const sipp = await startSipp(t);
  const p = await sipPlatform(t, sipp.port);

  interface Case { number: string; status: string; failure: string | null; outcome: string; reason: string; leg: string; disposition: string | null; sip: string }
  const fail = (number: string, status: string, failure: string, sip: string): Case => ({
    number, status, failure, outcome: status === 'BUSY' ? 'busy' : status === 'NO_ANSWER' ? 'no_answer' : 'failed', reason: failure, leg: failure,
    disposition: status === 'BUSY' ? 'call_busy' : status === 'NO_ANSWER' ? 'call_no_answer' : 'call_failed', sip,
  });
  // The staff phone (connect_number) fails: the call ends with its outcome and the called party is never dialed.
  const CONNECT_FAILS: Case[] = [
    fail('+14155559486', 'BUSY', 'busy', '486'),
    fail('+14155559600', 'BUSY', 'busy', '600'),
    fail('+14155559408', 'NO_ANSWER', 'no_answer', '408'),
    fail('+14155559480', 'NO_ANSWER', 'no_answer', '480'),
    fail('+14155559403', 'FAILED', 'call_declined', '403'),
    fail('+14155559603', 'FAILED', 'call_declined', '603'),
    fail('+14155559404', 'FAILED', 'number_unreachable', '404'),
    fail('+14155559410', 'FAILED', 'number_unreachable', '410'),
    fail('+14155559484', 'FAILED', 'number_unreachable', '484'),
    fail('+14155559604', 'FAILED', 'number_unreachable', '604'),
    fail('+14155559503', 'FAILED', 'carrier_rejected', '503'),
    fail('+14155559500', 'FAILED', 'carrier_rejected', '500'),
    fail('+14155550020', 'FAILED', 'carrier_rejected', '401 and no SIP_TRUNK_USERNAME'),
    fail('+14155550030', 'FAILED', 'carrier_rejected', '200 with its RTP address outside SIP_TRUNK_ALLOW'),
    fail('+14155550031', 'FAILED', 'carrier_rejected', '200 with a body that is not SDP'),
    fail('+14155550002', 'NO_ANSWER', 'no_answer', 'ringing past the ring timeout (our CANCEL)'),
    fail('+14155550003', 'FAILED', 'carrier_rejected', 'no response at all (Timer B)'),
  ];

  async function checkCall(t: Test, c: any, e: Case, label: string) {
    t.equal(c.status, e.status, `${label}: status`);
    t.equal(c.failure_code, e.failure, `${label}: failure_code`);
    t.equal(c.failure_category, e.failure ? 'unreachable' : null, `${label}: failure_category`);
    t.equal(c.call_outcome, e.outcome, `${label}: call_outcome`);
    t.equal(c.disconnection_reason, e.reason, `${label}: disconnection_reason`);
    await p.rx.waitFor(() => Object.values(deliveriesFor(p.rx, c.id)).flat().length >= 3 + (e.disposition ? 1 : 0), 60_000);
    const d = deliveriesFor(p.rx, c.id);
    t.equal(d.new_call?.length, 1, `${label}: new_call once`);
    t.equal(d.call_completed?.length, 1, `${label}: call_completed once`);
    t.equal(d['phone_call.ended']?.[0]?.body.data.failure_code, e.failure, `${label}: phone_call.ended carries failure_code`);
    for (const type of DISPOSITIONS) t.equal(d[type]?.length ?? 0, type === e.disposition ? 1 : 0, `${label}: ${type}`);
  }

  t.test('a failing connect leg: every final response, the ring timeout, Timer B, unusable answers', async (t) => {
    const calls = await Promise.all(CONNECT_FAILS.map(async (e, i) => {
      const r = await dial(p.env, p.org, `+1415555${String(1000 + i)}`, e.number);
      t.equal(r.status, 202, `dial ${e.number}: ${r.text}`);
      return { e, id: r.body.data.call_id as string };
    }));
    // 0002 rings: ringing is reported (100/180) before the ring timeout ends it.
    await legStatus(p, calls.find((c) => c.e.number.endsWith('0002'))!.id, 'connect', 'RINGING', 25_000);
    for (const { e, id } of calls) {
      const c = await endedCall(p, id, 90_000);
      const label = `${e.number} (${e.sip})`;
      await checkCall(t, c, e, label);
      t.same(c.legs.map((l: any) => [l.role, l.status, l.end_reason]), [['connect', 'ENDED', e.leg], ['destination', 'PENDING', null]],
        `${label}: the connect leg ended ${e.leg}; the called party was never dialed`);
      t.equal(c.cost_cents, 0, `${label}: nothing answered, nothing charged`);
      t.ok(sipCallIdOf(sipp, e.number), `${label}: SIPp received the INVITE`);
    }
    const sent = (n: string) => requestsTo(sipp, n);
    t.equal(sent('+14155550002').CANCEL?.length, 1, 'ring timeout: one CANCEL');
    t.equal(sent('+14155550002').ACK?.length, 1, 'ring timeout: the 487 is acknowledged');
    t.ok((sent('+14155550003').INVITE?.length ?? 0) >= 6, `Timer B: the INVITE was retransmitted over UDP (${sent('+14155550003').INVITE?.length} sends in 32 s)`);
    t.notOk(sent('+14155550003').CANCEL, 'Timer B: no CANCEL without a provisional response');
    for (const n of ['+14155550030', '+14155550031']) {
      t.equal(sent(n).ACK?.length, 1, `${n}: the 200 is acknowledged`);
      t.equal(sent(n).BYE?.length, 1, `${n}: then hung up`);
    }
    for (const n of ['+14155559486', '+14155559404', '+14155550020']) t.equal(sent(n).ACK?.length, 1, `${n}: the final response is acknowledged`);
    t.equal(sent('+14155550020').INVITE?.length, 1, '401 without credentials: not retried');
  });

  t.test('answered legs: the far end hangs up, and a failing destination ends a bridge', async (t) => {
    const talked = await dial(p.env, p.org, '+12125550007', '+14155552001');
    const busyDest = await dial(p.env, p.org, '+12125559486', '+14155552002');
    t.equal(talked.status, 202);
    t.equal(busyDest.status, 202);
    const a = await endedCall(p, talked.body.data.call_id);
    await checkCall(t, a, { number: '', status: 'COMPLETED', failure: null, outcome: 'answered', reason: 'remote_hangup', leg: '', disposition: null, sip: '' }, 'far-end BYE');
    t.equal(a.picked_up, true);
    t.same(a.legs.map((l: any) => l.end_reason), ['local_hangup', 'completed'], 'the called party hung up; we hung up the staff phone');
    t.ok(a.duration_seconds >= 1, `talked ${a.duration_seconds} s`);
    t.equal(a.cost_cents, 4, 'two answered legs, one started minute each at SIP_PRICE_PER_MINUTE_CENTS=2');
    t.equal(requestsTo(sipp, '+14155552001').BYE?.length, 1, 'the staff phone got our BYE');
    const b = await endedCall(p, busyDest.body.data.call_id);
    await checkCall(t, b, fail('', 'BUSY', 'busy', ''), 'busy destination');
    t.same(b.legs.map((l: any) => l.end_reason), ['local_hangup', 'busy']);
    await eventually(async () => requestsTo(sipp, '+14155552002').BYE?.length === 1, 20_000);
    t.pass('the staff phone of the busy call got our BYE');
  });
}
