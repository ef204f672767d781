import { WebhookReceiver } from 'livekit-server-sdk';
import { publishCarrierEvent } from '../../shared/carriers/carrier.ts';
import { carrierEventFromWebhook } from '../../shared/carriers/livekit.ts';
import { sequenceAtReceipt } from '../../shared/carriers/receipt-order.ts';
import type { LiveKitSettings } from '../../shared/config.ts';
import { callRuntime } from '../../shared/calls/runtime.ts';
import type { HttpGateway } from '../http/server.ts';

export const LIVEKIT_WEBHOOK_PATH = '/v1/carriers/livekit/webhook';

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
      const numbered = await sequenceAtReceipt(redis, key, carrierEvent, `lk-${ev.id}`);
      await publishCarrierEvent(callRuntime(gateway.deps).queues.carrierEvents, numbered, { dedupId: `lk-${ev.id}` });
    }
    return json(200, { received: true, mapped: carrierEvent !== null });
  });
}
