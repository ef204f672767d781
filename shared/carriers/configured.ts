// Carrier selection (config.carrier, env CARRIER). The gateway only needs a carrier's profile (name, time scale,
// price) to record a call; the workers hold the carrier itself.
import type { Queue } from 'bullmq';
import type { Config } from '../config.ts';
import type { Carrier } from './carrier.ts';
import { LiveKitCarrier } from './livekit.ts';
import { SANDBOX_PRICE_CENTS_PER_MINUTE, SandboxCarrier } from './sandbox.ts';

export interface CarrierProfile { name: string; timeScale: number; pricePerMinuteCents: number }

export function carrierProfile(config: Config): CarrierProfile {
  switch (config.carrier) {
    case 'sandbox': return { name: 'sandbox', timeScale: config.sandboxTimeScale, pricePerMinuteCents: SANDBOX_PRICE_CENTS_PER_MINUTE };
    // A real network runs in real time; its price comes from LIVEKIT_PRICE_PER_MINUTE_CENTS.
    case 'livekit': return { name: 'livekit', timeScale: 1, pricePerMinuteCents: config.livekit!.pricePerMinuteCents };
  }
}

/** The configured carrier; its events go to `events` (the carrier-events queue). */
export function createCarrier(config: Config, events: Queue): Carrier {
  switch (config.carrier) {
    case 'sandbox': return new SandboxCarrier(events, config.sandboxTimeScale);
    // Progress arrives through LiveKit webhooks at the gateway, which queues it on `events` itself.
    case 'livekit': return new LiveKitCarrier(config.livekit!);
  }
}
