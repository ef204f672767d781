import { createHash, createHmac, randomBytes } from 'node:crypto';

// Standard Webhooks (https://www.standardwebhooks.com): the secret is `whsec_` + base64 of random bytes; the
// signature is base64(HMAC-SHA256(secret bytes, "<webhook-id>.<webhook-timestamp>.<body>")) sent as "v1,<sig>".
// The `standardwebhooks` npm package verifies exactly this.

export const SECRET_PREFIX = 'whsec_';

export const newSigningSecret = () => SECRET_PREFIX + randomBytes(32).toString('base64');

const keyCache = new Map<string, Buffer>();
function secretKey(secret: string): Buffer {
  let k = keyCache.get(secret);
  if (!k) {
    k = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
    if (keyCache.size > 10_000) keyCache.clear();
    keyCache.set(secret, k);
  }
  return k;
}

export function sign(secret: string, webhookId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${webhookId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers plus content-type, for one attempt (fresh timestamp, stable id). */
export function signedHeaders(secret: string, webhookId: string, body: string, nowMs = Date.now()): Record<string, string> {
  const ts = Math.floor(nowMs / 1000);
  return {
    'content-type': 'application/json',
    'webhook-id': webhookId,
    'webhook-timestamp': String(ts),
    'webhook-signature': sign(secret, webhookId, ts, body),
  };
}

/** The delivery id of one event to one subscription: deterministic, so a relay re-run after a crash produces the
 *  same id (and the same BullMQ job id), and it is the webhook-id on every retry. */
export function deliveryId(eventId: string, subscriptionId: string): string {
  return 'msg_' + createHash('sha256').update(`${eventId}:${subscriptionId}`).digest('base64url').slice(0, 27);
}
