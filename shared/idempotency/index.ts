import type { Redis } from 'ioredis';
import { ApiError } from '../errors.ts';
import { sha256hex } from '../ids.ts';
import { defineScript, script } from '../redis-scripts.ts';

export const IDEMPOTENCY_RETENTION_MS = 24 * 3600_000;
// How long a request may run before its claim lapses (a crashed gateway must not lock a key for a day).
const LEASE_MS = 60_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface StoredResponse { status: number; body: string | Buffer; headers: Record<string, string> }

export type Claim =
  | { kind: 'new'; finish(res: StoredResponse): Promise<void> }
  | { kind: 'replay'; response: StoredResponse };

/** JSON with sorted keys, so the same parameters in another order are the same request. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** Idempotency-Key handling: scoped to the credential, kept 24 hours after the first successful (2xx) response.
 *  A failed first attempt releases the key so the client can retry with it. */
export class IdempotencyStore {
  private readonly begin;
  private readonly finish;
  constructor(redis: Redis, private readonly key: (...p: string[]) => string) {
    defineScript(redis, 'olIdemBegin', new URL('./begin.lua', import.meta.url), 1);
    defineScript(redis, 'olIdemFinish', new URL('./finish.lua', import.meta.url), 1);
    this.begin = script(redis, 'olIdemBegin');
    this.finish = script(redis, 'olIdemFinish');
  }

  static validateKey(k: string): void {
    if (!KEY_PATTERN.test(k)) {
      throw new ApiError('validation_error', 'Idempotency-Key must be 1 to 255 printable ASCII characters.', {
        fields: { 'Idempotency-Key': 'must be 1 to 255 printable ASCII characters' },
      });
    }
  }

  async claim(credentialId: string, idemKey: string, fingerprint: string, requestId: string): Promise<Claim> {
    const recordKey = this.key('idem', credentialId, sha256hex(idemKey));
    const r = (await this.begin(recordKey, fingerprint, requestId, LEASE_MS)) as (string | null)[];
    if (r[0] === 'new') {
      return {
        kind: 'new',
        finish: async (res) => {
          const ok = res.status >= 200 && res.status < 300;
          await this.finish(recordKey, requestId, ok ? 'store' : 'release', res.status, res.body.toString(),
            JSON.stringify(res.headers), IDEMPOTENCY_RETENTION_MS);
        },
      };
    }
    const [state, fp, rid, status, body, headers] = r as string[];
    if (fp !== fingerprint) {
      throw new ApiError('idempotency_conflict',
        'This Idempotency-Key was already used with a different request. Use a new key for a new request.',
        { fields: { conflicts_with: rid } });
    }
    if (state !== 'done') {
      // Same code as a body mismatch (the reference's only idempotency code); Retry-After and the field text say
      // that this one is worth retrying.
      throw new ApiError('idempotency_conflict',
        'A request with this Idempotency-Key is still being processed. Retry shortly to receive its result.',
        { fields: { conflicts_with: rid, 'Idempotency-Key': 'in progress; retry after the Retry-After delay' },
          headers: { 'Retry-After': '1' } });
    }
    return { kind: 'replay', response: { status: Number(status), body, headers: JSON.parse(headers) } };
  }
}
