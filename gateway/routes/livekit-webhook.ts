import { sha256hex } from '../../shared/ids.ts';
import { Type } from '@sinclair/typebox';
import { WebhookReceiver } from 'livekit-server-sdk';
import { publishCarrierEvent } from '../../shared/carriers/carrier.ts';
import { carrierEventFromWebhook } from '../../shared/carriers/livekit.ts';
import { sequenceAtReceipt } from '../../shared/carriers/receipt-order.ts';
import type { LiveKitSettings } from '../../shared/config.ts';
import type { HttpGateway } from '../http/server.ts';
import type { RawRouteDoc } from '../http/types.ts';

export const LIVEKIT_WEBHOOK_PATH = '/v1/carriers/livekit/webhook';

/** The webhook's entry in the OpenAPI document (listed when it is served, CARRIER=livekit). The body schema documents
 *  LiveKit's event; the route verifies the signature and reads it with the SDK rather than validating it. */
export const LIVEKIT_WEBHOOK_DOC: RawRouteDoc = {
  method: 'POST', path: LIVEKIT_WEBHOOK_PATH, tag: 'Carriers', security: 'livekitWebhook',
  summary: 'Receive LiveKit webhooks',
  description: 'Configure this URL as the LiveKit project\'s webhook (only served with CARRIER=livekit). Each body is '
    + 'verified with LiveKit\'s signature (the Authorization JWT carries the body\'s SHA-256; unauthorized otherwise). '
    + 'Events about this platform\'s SIP legs become carrier events for the call state machine: participant_joined with '
    + 'sip.callStatus ringing is ringing, active is answered; participant_left and participant_connection_aborted end '
    + 'the leg, with the reason from the SIP status code (486/600 busy, 408/480/487 no_answer, 603 call_declined, '
    + '404/410/484/485/604 number_unreachable, others carrier_rejected). A retried event (same id) is queued once. Other '
    + 'events are acknowledged and ignored (mapped: false).',
  body: Type.Object({
    event: Type.String({ description: 'The LiveKit event name, e.g. participant_joined, participant_left.' }),
    id: Type.String({ description: 'LiveKit\'s event id; a retry repeats it.' }),
    createdAt: Type.String({ description: 'When LiveKit produced the event (Unix seconds, as a string).' }),
    room: Type.Optional(Type.Object({ name: Type.String({ description: 'The room: call-<call id>.' }) },
      { additionalProperties: true, description: 'The room of the call.' })),
    participant: Type.Optional(Type.Object({
      identity: Type.String({ description: 'The SIP leg: <call id>-<role>.' }),
      kind: Type.String({ description: 'SIP for the legs this platform placed.' }),
      attributes: Type.Optional(Type.Record(Type.String(), Type.String(),
        { description: 'LiveKit SIP attributes; sip.callStatus (ringing, active) and sip.callStatusCode are read.' })),
      disconnectReason: Type.Optional(Type.String({ description: 'Why the participant left, when it did.' })),
    }, { additionalProperties: true, description: 'The participant (leg) the event is about.' })),
  }, { additionalProperties: true, description: 'A LiveKit WebhookEvent in its JSON form.' }),
  response: {
    status: 200, description: 'Acknowledged.',
    schema: Type.Object({
      received: Type.Boolean({ description: 'Always true: the event was verified and acknowledged.' }),
      mapped: Type.Boolean({ description: 'Whether it was about one of this platform\'s legs and was queued as a carrier event.' }),
    }, { description: 'The acknowledgement.' }),
  },
  errors: ['unauthorized'],
  examples: {
    request: {
      event: 'participant_joined', id: 'EV_3kQ9vX2mZr7T', createdAt: '1795710245',
      room: { name: 'call-0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98' },
      participant: { identity: '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98-destination', kind: 'SIP', attributes: { 'sip.callStatus': 'active' } },
    },
    response: { received: true, mapped: true },
  },
};

/** LiveKit posts room and participant webhooks here (configure this URL in the LiveKit project). The body is
 *  verified with the SDK's receiver (a JWT in Authorization carrying the body's SHA-256); verified events about our
 *  SIP legs go on the carrier-events queue of the calls runtime, for the workers' state machine. */
export function registerLiveKitWebhook(gateway: HttpGateway, s: LiveKitSettings): void {
  const receiver = new WebhookReceiver(s.apiKey, s.apiSecret);
  const json = (status: number, body: unknown) => ({ status, contentType: 'application/json', body: JSON.stringify(body) });
  gateway.addRaw('POST', LIVEKIT_WEBHOOK_PATH, async ({ headers, body }) => {
    let ev;
    try {
      ev = await receiver.receive(body?.toString('utf8') ?? '', headers.authorization ?? headers.authorize);
    } catch (err) {
      gateway.deps.log.warn({ err: (err as Error).message }, 'livekit webhook refused');
      return json(401, { error: { code: 'unauthorized', message: 'The webhook signature did not verify.' } });
    }
    const carrierEvent = carrierEventFromWebhook(ev);
    // LiveKit retries a webhook it considers undelivered; its event id keeps a repeat from being queued twice (a
    // numbered event: the same number, hence the same job id). Answers and ends are numbered in receipt order.
    if (carrierEvent) {
      const { redis, key } = gateway.deps;
      // BullMQ refuses ':' in a job id: an event id that is not a plain token is named by its hash instead.
      const eventKey = `lk-${/^[A-Za-z0-9_-]{1,128}$/.test(ev.id) ? ev.id : sha256hex(ev.id)}`;
      const numbered = await sequenceAtReceipt(redis, key, carrierEvent, eventKey);
      await publishCarrierEvent(gateway.deps.calls.queues.carrierEvents, numbered, { dedupId: eventKey });
    }
    return json(200, { received: true, mapped: carrierEvent !== null });
  });
}
