// The LiveKit carrier cannot run against a real server here. These tests drive the real SDK against a local
// stand-in that records the Twirp requests it receives, and feed the mapping real, signed webhook bodies.
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { DisconnectReason, ParticipantInfo, ParticipantInfo_Kind } from '@livekit/protocol';
import { AccessToken, TokenVerifier, WebhookEvent, WebhookReceiver } from 'livekit-server-sdk';
import t from 'tap';
import {
  carrierEventFromWebhook, LiveKitCarrier, roomNameFor, sipParticipantRequest, sipStatusToOutcome,
} from '../../shared/carriers/livekit.ts';
import { legId, type OriginateRequest } from '../../shared/carriers/carrier.ts';
import { loadConfig } from '../../shared/config.ts';

const CALL = '0190a4a4-0000-7000-8000-00000000abcd';
const KEY = 'APIkey123';
const SECRET = 'secret-secret-secret-secret-secret-0123456789';

const originate: OriginateRequest = {
  callId: CALL, role: 'destination', legId: legId(CALL, 'destination'), number: '+14155550123', from: '+14155550100',
  ringTimeoutSeconds: 30, maxDurationSeconds: 3600, record: false,
};

interface Seen { path: string; body: any; auth: string }

async function standIn(t: { teardown(fn: () => unknown): void }, answer: (s: Seen) => [number, unknown]) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => { raw += d; });
    req.on('end', () => {
      const s = { path: req.url ?? '', body: raw ? JSON.parse(raw) : null, auth: req.headers.authorization ?? '' };
      seen.push(s);
      const [status, body] = answer(s);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as { port: number }).port;
  return { seen, settings: { url: `http://127.0.0.1:${port}`, apiKey: KEY, apiSecret: SECRET, sipTrunkId: 'ST_trunk1', pricePerMinuteCents: 2 } };
}

t.test('settings come from LIVEKIT_* and name what is missing', async (t) => {
  t.throws(() => loadConfig({ CARRIER: 'livekit', LIVEKIT_URL: 'https://x' }), /LIVEKIT_API_KEY, LIVEKIT_API_SECRET, LIVEKIT_SIP_TRUNK_ID/);
  t.equal(loadConfig({}).livekit, null, 'the sandbox needs none');
  t.match(loadConfig({ CARRIER: 'livekit', LIVEKIT_URL: 'https://x', LIVEKIT_API_KEY: 'k', LIVEKIT_API_SECRET: 's', LIVEKIT_SIP_TRUNK_ID: 'ST' }).livekit,
    { sipTrunkId: 'ST', pricePerMinuteCents: 2 });
});

t.test('the createSipParticipant request for a leg', async (t) => {
  const r = sipParticipantRequest(originate, { url: 'x', apiKey: 'k', apiSecret: 's', sipTrunkId: 'ST_1', pricePerMinuteCents: 2 });
  t.equal(r.trunkId, 'ST_1');
  t.equal(r.number, '+14155550123');
  t.equal(r.roomName, `call-${CALL}`);
  t.match(r.opts, {
    fromNumber: '+14155550100', participantIdentity: `${CALL}-destination`, ringingTimeout: 30, maxCallDuration: 3600,
    waitUntilAnswered: false, participantAttributes: { 'ol.call_id': CALL, 'ol.leg_role': 'destination' },
  });
});

t.test('originate sends a signed CreateSIPParticipant and is idempotent per leg', async (t) => {
  let first = true;
  const { seen, settings } = await standIn(t, (s) => {
    if (s.path.endsWith('/CreateSIPParticipant') && first) {
      first = false;
      return [200, { participantId: 'PA_1', participantIdentity: s.body.participantIdentity, roomName: s.body.roomName, sipCallId: 'SCL_1' }];
    }
    if (s.path.endsWith('/CreateSIPParticipant')) return [409, { code: 'already_exists', msg: 'participant exists' }];
    return [404, { code: 'not_found', msg: 'no such participant' }];
  });
  const carrier = new LiveKitCarrier(settings);
  await carrier.originate(originate);
  await carrier.originate(originate); // the repeat after a crash: already_exists is success
  t.equal(seen.length, 2);
  const s = seen[0];
  t.equal(s.path, '/twirp/livekit.SIP/CreateSIPParticipant');
  // Twirp JSON with protobuf's camelCase field names.
  t.match(s.body, {
    sipTrunkId: 'ST_trunk1', sipCallTo: '+14155550123', sipNumber: '+14155550100', roomName: roomNameFor(CALL),
    participantIdentity: `${CALL}-destination`,
  });
  t.match(JSON.stringify(s.body), /30s/, 'ringing timeout sent as a duration');
  const claims = await new TokenVerifier(KEY, SECRET).verify(s.auth.replace(/^Bearer /, ''));
  t.ok((claims as { sip?: { call?: boolean } }).sip?.call, 'token carries the sip.call grant');

  await carrier.hangup({ callId: CALL, role: 'destination', legId: `${CALL}-destination`, number: '+14155550123' });
  t.equal(seen[2].path, '/twirp/livekit.RoomService/RemoveParticipant');
  t.match(seen[2].body, { room: roomNameFor(CALL), identity: `${CALL}-destination` });
  t.pass('hanging up a leg that is already gone is a no-op');
});

t.test('a carrier error other than a repeat is raised (the dial job retries)', async (t) => {
  const { settings } = await standIn(t, () => [503, { code: 'unavailable', msg: 'trunk down' }]);
  await t.rejects(new LiveKitCarrier(settings).originate(originate));
});

t.test('SIP status codes map to the reference outcomes', async (t) => {
  t.same([486, 600, 480, 408, 487, 603, 404, 484, 604, 500, 503].map(sipStatusToOutcome), [
    'busy', 'busy', 'no_answer', 'no_answer', 'no_answer', 'call_declined', 'number_unreachable', 'number_unreachable',
    'number_unreachable', 'carrier_rejected', 'carrier_rejected',
  ]);
});

function hook(event: string, p: Partial<ConstructorParameters<typeof ParticipantInfo>[0]>, room = roomNameFor(CALL)) {
  const ev = new WebhookEvent({
    room: { name: room }, createdAt: BigInt(1_800_000_000), id: 'EV_1',
    participant: new ParticipantInfo({ identity: `${CALL}-connect`, kind: ParticipantInfo_Kind.SIP, ...p }),
  } as never);
  ev.event = event as WebhookEvent['event']; // the subclass field is not set by the constructor
  return ev;
}

t.test('webhooks map to carrier events', async (t) => {
  const at = new Date(1_800_000_000_000).toISOString();
  t.same(carrierEventFromWebhook(hook('participant_joined', { attributes: { 'sip.callStatus': 'ringing' } })),
    { carrier: 'livekit', callId: CALL, legId: `${CALL}-connect`, role: 'connect', at, kind: 'ringing' });
  t.match(carrierEventFromWebhook(hook('participant_joined', { attributes: { 'sip.callStatus': 'active' } })), { kind: 'answered' });
  t.equal(carrierEventFromWebhook(hook('participant_joined', { attributes: { 'sip.callStatus': 'dialing' } })), null, 'dialing carries nothing');
  const left = (attributes: Record<string, string>, disconnectReason: DisconnectReason) =>
    carrierEventFromWebhook(hook('participant_left', { attributes, disconnectReason }));
  t.match(left({ 'sip.callStatus': 'active' }, DisconnectReason.CLIENT_INITIATED), { kind: 'ended', reason: 'completed' });
  t.match(left({ 'sip.callStatus': 'active' }, DisconnectReason.PARTICIPANT_REMOVED), { reason: 'local_hangup' });
  t.match(left({ 'sip.callStatus': 'dialing' }, DisconnectReason.USER_UNAVAILABLE), { reason: 'no_answer' });
  t.match(left({ 'sip.callStatus': 'ringing' }, DisconnectReason.USER_REJECTED), { reason: 'call_declined' });
  t.match(left({ 'sip.callStatus': 'dialing' }, DisconnectReason.SIP_TRUNK_FAILURE), { reason: 'carrier_rejected' });
  t.match(left({ 'sip.callStatus': 'dialing', 'sip.callStatusCode': '486' }, DisconnectReason.USER_REJECTED), { reason: 'busy' });
  t.equal(carrierEventFromWebhook(hook('participant_joined', { kind: ParticipantInfo_Kind.STANDARD, attributes: { 'sip.callStatus': 'active' } })), null,
    'non-SIP participants are ignored');
  t.equal(carrierEventFromWebhook(hook('participant_joined', { identity: 'someone-else', attributes: { 'sip.callStatus': 'active' } })), null);
  t.equal(carrierEventFromWebhook(hook('participant_joined', { attributes: { 'sip.callStatus': 'active' } }, 'another-room')), null);
  t.equal(carrierEventFromWebhook(hook('room_finished', {})), null);
});

t.test('a webhook signed by LiveKit verifies with the SDK receiver and maps', async (t) => {
  const body = JSON.stringify(hook('participant_left', {
    attributes: { 'sip.callStatus': 'dialing' }, disconnectReason: DisconnectReason.USER_UNAVAILABLE,
  }).toJson());
  const at = new AccessToken(KEY, SECRET);
  at.sha256 = createHash('sha256').update(body).digest('base64');
  const auth = await at.toJwt();
  const receiver = new WebhookReceiver(KEY, SECRET);
  const ev = await receiver.receive(body, auth);
  t.match(carrierEventFromWebhook(ev), { kind: 'ended', reason: 'no_answer', role: 'connect', callId: CALL });
  await t.rejects(receiver.receive(body.replace('connect', 'destination'), auth), 'a tampered body is refused');
});
