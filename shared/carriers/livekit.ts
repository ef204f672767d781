// The production carrier: PSTN legs through LiveKit SIP. One LiveKit room per call (`call-<call id>`); each leg is a
// SIP participant whose identity is the leg id, so both legs of a bridge share the room and hear each other.
// Progress arrives as LiveKit webhooks (verified with the SDK's WebhookReceiver by the gateway) and is mapped to
// CarrierEvents here. Untested against a real LiveKit server (none can run in this sandbox): the request it builds
// and the webhook mapping are tested against the real SDK talking to a local stand-in HTTP server.
import { DisconnectReason, ParticipantInfo_Kind, type ParticipantInfo } from '@livekit/protocol';
import { RoomServiceClient, SipClient, type CreateSipParticipantOptions, type WebhookEvent } from 'livekit-server-sdk';
import type { LiveKitSettings } from '../config.ts';
import type { AsyncFailureCode, BridgeRequest, Carrier, CarrierEvent, LegEndReason, LegRef, LegRole, OriginateRequest } from './carrier.ts';

export const roomNameFor = (callId: string) => `call-${callId}`;

const LEG_IDENTITY = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-(connect|destination)$/;

/** The arguments of SipClient.createSipParticipant for one leg. */
export function sipParticipantRequest(req: OriginateRequest, s: LiveKitSettings) {
  const opts: CreateSipParticipantOptions = {
    fromNumber: req.from,
    participantIdentity: req.legId,
    participantName: req.role === 'connect' ? 'staff phone' : 'called party',
    participantAttributes: { 'ol.call_id': req.callId, 'ol.leg_role': req.role, ...(req.agent ? { 'ol.agent': req.agent.name } : {}) },
    ringingTimeout: req.ringTimeoutSeconds,
    maxCallDuration: req.maxDurationSeconds,
    // Progress comes from webhooks; blocking the dial job until answer would hold a worker for the whole ring.
    waitUntilAnswered: false,
    playDialtone: req.role === 'destination',
  };
  return { trunkId: s.sipTrunkId, number: req.number, roomName: roomNameFor(req.callId), opts };
}

/** SIP final response codes to the reference's asynchronous outcomes. */
export function sipStatusToOutcome(code: number): AsyncFailureCode {
  if (code === 486 || code === 600) return 'busy';
  if (code === 408 || code === 480 || code === 487) return 'no_answer';
  if (code === 603) return 'call_declined';
  if (code === 404 || code === 410 || code === 484 || code === 485 || code === 604) return 'number_unreachable';
  return 'carrier_rejected';
}

/** Why a SIP participant left, from the disconnect reason and (when LiveKit reports it) the SIP status code. */
export function endReasonOf(p: ParticipantInfo): LegEndReason {
  const wasAnswered = p.attributes['sip.callStatus'] === 'active' || p.attributes['sip.callStatus'] === 'hangup';
  if (wasAnswered) return p.disconnectReason === DisconnectReason.PARTICIPANT_REMOVED ? 'local_hangup' : 'completed';
  const sipCode = Number(p.attributes['sip.callStatusCode'] ?? p.attributes['sip.statusCode'] ?? NaN);
  if (Number.isInteger(sipCode) && sipCode >= 300) return sipStatusToOutcome(sipCode);
  switch (p.disconnectReason) {
    case DisconnectReason.USER_UNAVAILABLE: return 'no_answer';
    case DisconnectReason.USER_REJECTED: return 'call_declined';
    case DisconnectReason.SIP_TRUNK_FAILURE: return 'carrier_rejected';
    case DisconnectReason.PARTICIPANT_REMOVED: return 'local_hangup';
    default: return 'no_answer';
  }
}

/** Maps one verified LiveKit webhook to a carrier event, or null when it is not about one of our SIP legs or
 *  carries nothing the state machine needs (e.g. a leg still dialing). */
export function carrierEventFromWebhook(ev: WebhookEvent): CarrierEvent | null {
  const p = ev.participant;
  if (!p || p.kind !== ParticipantInfo_Kind.SIP) return null;
  const m = LEG_IDENTITY.exec(p.identity);
  if (!m) return null;
  const [, callId, role] = m;
  if (ev.room && ev.room.name && ev.room.name !== roomNameFor(callId)) return null;
  const at = new Date(Number(ev.createdAt) * 1000 || Date.now()).toISOString();
  const base = { carrier: 'livekit', callId, legId: p.identity, role: role as LegRole, at };
  const status = p.attributes['sip.callStatus'];
  if (ev.event === 'participant_joined') {
    if (status === 'active') return { ...base, kind: 'answered' };
    if (status === 'ringing') return { ...base, kind: 'ringing' };
    return null;
  }
  if (ev.event === 'participant_left' || ev.event === 'participant_connection_aborted') {
    return { ...base, kind: 'ended', reason: endReasonOf(p) };
  }
  return null;
}

interface SipApi { createSipParticipant: SipClient['createSipParticipant'] }
interface RoomApi { removeParticipant: RoomServiceClient['removeParticipant'] }

/** Twirp errors LiveKit answers for a repeated command: the leg already exists, or is already gone. */
const isCode = (err: unknown, codes: string[]) => codes.includes((err as { code?: string })?.code ?? '');

export class LiveKitCarrier implements Carrier {
  readonly name = 'livekit';
  readonly timeScale = 1;
  readonly pricePerMinuteCents: number;
  private readonly sip: SipApi;
  private readonly rooms: RoomApi;

  constructor(private readonly s: LiveKitSettings, clients?: { sip?: SipApi; rooms?: RoomApi }) {
    this.pricePerMinuteCents = s.pricePerMinuteCents;
    this.sip = clients?.sip ?? new SipClient(s.url, s.apiKey, s.apiSecret);
    this.rooms = clients?.rooms ?? new RoomServiceClient(s.url, s.apiKey, s.apiSecret);
  }

  async originate(req: OriginateRequest): Promise<void> {
    const r = sipParticipantRequest(req, this.s);
    try {
      await this.sip.createSipParticipant(r.trunkId, r.number, r.roomName, r.opts);
    } catch (err) {
      // The identity is the leg id, so a repeated originate after a crash finds the first leg and stops there.
      if (isCode(err, ['already_exists'])) return;
      throw err;
    }
  }

  async hangup(leg: LegRef): Promise<void> {
    try {
      await this.rooms.removeParticipant(roomNameFor(leg.callId), leg.legId);
    } catch (err) {
      if (isCode(err, ['not_found'])) return; // already gone
      throw err;
    }
  }

  /** Both legs already share the call's room, so they hear each other from the moment both are answered. */
  async bridge(_req: BridgeRequest): Promise<void> {}
}
