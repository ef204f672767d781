import { createHash, randomBytes } from 'node:crypto';

// Public identifiers and secrets. Prefixes are fixed so a leaked string says what it is.
export const API_KEY_PREFIX = 'olk_';
export const CLIENT_TOKEN_PREFIX = 'olct_';
export const SUBSCRIPTION_PREFIX = 'whsub_';
export const REQUEST_PREFIX = 'req_';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform base62 string (rejection sampling, no modulo bias). */
export function randomToken(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const sha256 = (s: string) => createHash('sha256').update(s).digest();
export const sha256hex = (s: string) => createHash('sha256').update(s).digest('hex');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A syntactically valid UUID (any version): ids from outside are checked before they reach a uuid column. */
export const isUuid = (s: string) => UUID.test(s);

export const newApiKey = () => API_KEY_PREFIX + randomToken(40);
// Request ids: a random per-process prefix and a counter. Unique across processes and restarts (the prefix has
// ~71 bits) without spending random bytes on every request, which showed up in the gateway profile.
const REQUEST_ID_PROCESS = randomToken(12);
let requestCounter = 0;
export const newRequestId = () => `${REQUEST_PREFIX}${REQUEST_ID_PROCESS}${(requestCounter++).toString(36).padStart(8, '0')}`;

/** UUIDv7: time-ordered, so ordering by id is ordering by creation time. */
export function uuidv7(now = Date.now()): string {
  const b = randomBytes(16);
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
