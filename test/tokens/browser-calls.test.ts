// Browser calls without services: the machine's abandon input, the browser leg's place in the effects, the client
// token signer and the softphone protocol parser.
import t from 'tap';
import { legId, type CarrierEvent, type LegRole } from '../../shared/carriers/carrier.ts';
import { pendingEffects, step, type Input, type MachineCall } from '../../shared/calls/machine.ts';
import type { Leg } from '../../shared/calls/model.ts';
import { ClientTokenSigner } from '../../shared/tokens/client-token.ts';
import { parseMessage } from '../../signaling/protocol.ts';
import { loadConfig } from '../../shared/config.ts';
import { roomUrl } from '../../shared/tickets/issue.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);
const leg = (role: LegRole, number: string, status: Leg['status'] = 'PENDING'): Leg =>
  ({ role, number, status, reason: null, originated_at: null, answered_at: null, ended_at: null });

const webrtcCall = (): MachineCall => ({
  id: '01900000-0000-7000-8000-000000000001', type: 'webrtc', status: 'QUEUED',
  legs: { destination: leg('destination', '+14155550123'), browser: leg('browser', 'browser:u1', 'ANSWERED') },
  picked_up: false, answered_at: null, ended_at: null, originated_at: null, call_outcome: null, failure_code: null,
  failure_category: null, disconnection_reason: null, duration_seconds: null, time_scale: 1, max_duration_seconds: 3600,
  price_cents_per_minute: 1, cost_cents: 0, spend_reserved_cents: null,
});
const ev = (role: LegRole, kind: CarrierEvent['kind'], s: number): Input =>
  ({ type: 'carrier', event: { carrier: 'sandbox', callId: 'x', legId: legId('x', role), role, kind, at: at(s).toISOString() } });

t.test('abandon: before the answer an abandoned setup, after it a normal end, after the end nothing', async (t) => {
  const q = step(webrtcCall(), { type: 'abandon', reason: 'ticket_expired', at: at(300) });
  t.match(q.call, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'ticket_expired',
    failure_code: null, duration_seconds: 0, cost_cents: 0 });
  t.ok(q.effects.some((e) => e.kind === 'release'));

  let c = step(webrtcCall(), { type: 'originate', at: at(0) }).call;
  t.equal(c.legs.destination!.status, 'DIALING', 'the destination leg is originated, not the browser');
  const ringing = step(c, { type: 'abandon', reason: 'setup_abandoned', at: at(1) });
  t.match(ringing.call, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'setup_abandoned' });
  t.same(ringing.effects.filter((e) => e.kind === 'hangup').map((e) => (e as { role: string }).role).sort(), ['browser', 'destination'],
    'hang-up effects name the browser leg too; the runtime leaves that one to signaling');

  c = step(c, ev('destination', 'answered', 2)).call;
  const answered = step(c, { type: 'abandon', reason: 'setup_abandoned', at: at(62) });
  t.match(answered.call, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'browser_hangup', duration_seconds: 60 });
  t.equal(answered.call.cost_cents, 1, 'only the carrier leg is priced (the browser leg has no answered_at)');
  t.equal(step(answered.call, { type: 'abandon', reason: 'setup_abandoned', at: at(70) }).result, 'already_ended');
  t.notOk(pendingEffects(webrtcCall()).some((e) => e.kind === 'originate'), 'a QUEUED browser call has nothing to originate');
});

t.test('client token signer: round trip, expiry, rotation, tampering', async (t) => {
  const a = new ClientTokenSigner('x'.repeat(32));
  const claims = { o: 'org', u: null, k: 'key', f: ['+14155550100'], t: [], s: ['voice:webrtc' as const] };
  const tok = a.sign({ ...claims, e: 2_000_000_000 });
  t.match(a.verify(tok, 1_000_000_000_000), { v: 1, o: 'org', k: 'key', f: ['+14155550100'] });
  t.equal(a.verify(tok, 2_000_000_000_000), null, 'expired');
  t.ok(new ClientTokenSigner('y'.repeat(32), 'x'.repeat(32)).verify(tok, 0), 'previous secret');
  t.equal(new ClientTokenSigner('y'.repeat(32)).verify(tok, 0), null, 'other secret');
  t.not(a.sign({ ...claims, e: 1 }), a.sign({ ...claims, e: 1 }), 'two tokens never collide');
  t.equal(a.verify(tok.replace('olct_', 'olk_'), 0), null);
});

t.test('protocol parser', async (t) => {
  t.match(parseMessage('{"type":"hello","v":1,"ticket":"olwt_x"}'), { type: 'hello' });
  t.equal(parseMessage('{"type":"hello","v":1}'), null, 'neither credential');
  t.equal(parseMessage('{"type":"hello","v":1,"ticket":"a","room_token":"b"}'), null, 'both credentials');
  t.equal(parseMessage('{"type":"hello","ticket":"a"}'), null, 'no version');
  t.equal(parseMessage('[1]'), null);
  t.equal(parseMessage('nope'), null);
  t.equal(parseMessage('{"type":"transport","direction":"sideways"}'), null);
  t.match(parseMessage('{"type":"produce","transport_id":"t","kind":"audio","rtp_parameters":{}}'), { type: 'produce' });
  t.equal(parseMessage('{"type":"dance"}'), null);
});

t.test('room_url: the softphone WebSocket with the sandbox, the LiveKit server with the LiveKit carrier', async (t) => {
  t.equal(roomUrl(loadConfig({ SIGNALING_PORT: '9001' })), 'ws://127.0.0.1:9001/v1/softphone');
  t.equal(roomUrl(loadConfig({ SIGNALING_PUBLIC_URL: 'wss://rtc.example.com/v1/softphone' })), 'wss://rtc.example.com/v1/softphone');
  t.equal(roomUrl(loadConfig({ CARRIER: 'livekit', LIVEKIT_URL: 'https://p.livekit.cloud', LIVEKIT_API_KEY: 'k',
    LIVEKIT_API_SECRET: 's', LIVEKIT_SIP_TRUNK_ID: 'ST_1' })), 'wss://p.livekit.cloud');
});
