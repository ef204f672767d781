// Carrier selection (config.carrier, env CARRIER). The gateway only needs a carrier's profile (name, time scale,
// price) to record a call; the workers hold the carrier itself.
import type { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import type { QueueRegistry } from '../queues/registry.ts';
import { configKeyer } from '../redis.ts';
import { CARRIER_EVENTS_QUEUE, type Carrier } from './carrier.ts';
import { LiveKitCarrier } from './livekit.ts';
import { SANDBOX_PRICE_CENTS_PER_MINUTE, SandboxCarrier } from './sandbox.ts';
import { SIP_CARRIER, SipCarrier } from './sip.ts';

export interface CarrierProfile {
  name: string;
  timeScale: number;
  pricePerMinuteCents: number;
  /** Whether AI calls can run: the SIP trunk carrier has no voice-agent media pipeline yet. */
  agentCalls: boolean;
}

export function carrierProfile(config: Config): CarrierProfile {
  switch (config.carrier) {
    case 'sandbox': return { name: 'sandbox', timeScale: config.sandboxTimeScale, pricePerMinuteCents: SANDBOX_PRICE_CENTS_PER_MINUTE, agentCalls: true };
    // A real network runs in real time; its price comes from LIVEKIT_PRICE_PER_MINUTE_CENTS.
    case 'livekit': return { name: 'livekit', timeScale: 1, pricePerMinuteCents: config.livekit!.pricePerMinuteCents, agentCalls: true };
    case 'sip': return { name: SIP_CARRIER, timeScale: 1, pricePerMinuteCents: config.sip!.pricePerMinuteCents, agentCalls: false };
  }
}

/** The configured carrier; its events go to the carrier-events queue of `queues`. */
export function createCarrier(config: Config, queues: QueueRegistry, redis: Redis): Carrier {
  const events = queues.get(CARRIER_EVENTS_QUEUE);
  switch (config.carrier) {
    case 'sandbox': return new SandboxCarrier(events, queues.flowProducer(), config.sandboxTimeScale);
    // Progress arrives through LiveKit webhooks at the gateway, which queues it on `events` itself.
    case 'livekit': return new LiveKitCarrier(config.livekit!);
    // Commands go to the signaling process owning each leg, which publishes the leg's events itself.
    case 'sip': return new SipCarrier(redis, configKeyer(config), queues, config.sip!);
  }
}
