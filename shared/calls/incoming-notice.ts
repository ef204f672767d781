// The ringing of inbound calls on Redis pub/sub (<prefix>:calls:incoming): whoever makes an inbound call ring (the SIP
// owner of its leg, or the gateway for a sandbox call rung with POST /v1/sandbox/calls/inbound {ring: true}) publishes
// `ring`; every signaling process rings its listening browsers (signaling/incoming.ts). Here, and not in signaling/,
// because the gateway publishes too.
import type { Redis } from 'ioredis';
import type { Keyer } from '../redis.ts';

export const incomingChannel = (key: Keyer) => key('calls', 'incoming');

export type IncomingNotice =
  | { kind: 'ring'; call_id: string; organization_id: string; to_number: string; from_number: string; ring_timeout_seconds: number }
  /** A browser took the call: the SIP owner answers it, the other browsers stop ringing. */
  | { kind: 'taken'; call_id: string; organization_id: string }
  /** The call stopped ringing without a browser (the caller hung up, nobody answered, it was hung up). */
  | { kind: 'over'; call_id: string; organization_id: string };

export const publishIncoming = (redis: Redis, key: Keyer, n: IncomingNotice) => redis.publish(incomingChannel(key), JSON.stringify(n));
