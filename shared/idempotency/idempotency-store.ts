import type { Redis } from 'ioredis';
import type { Db, Tx } from '../db.ts';
import { DomainError } from '../errors.ts';
import { sha256hex } from '../ids.ts';
import { defineScript, script } from '../redis-scripts.ts';
import { findRecord, writeRecord, type DurableRecord, type StoredResponse } from './records.ts';

export { IdempotencyRecordExists, type StoredResponse } from './records.ts';

export const IDEMPOTENCY_RETENTION_MS = 24 * 3600_000;
// How long a request may run before its claim lapses (a crashed gateway must not lock a key for a day).
export const DEFAULT_LEASE_MS = 60_000;
// Printable ASCII. Bytes >= 0x80 inside the value reach it (decoded, or as U+FFFD) and fail here; uWebSockets.js
// trims them at either end of a header value before JS sees it (docs/architecture.md, "Idempotency design"), which no pattern can catch.
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export type Claim = NewClaim | { kind: 'replay'; response: StoredResponse };

/** JSON with sorted keys, so the same parameters in another order are the same request. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** Idempotency-Key handling: scoped to the credential, kept 24 hours after the first successful (2xx) response.
 *  A failed first attempt releases the key so the client can retry with it.
 *  Redis holds the claims ("running" under a lease) and a fast copy of finished responses; PostgreSQL holds the
 *  durable record that a handler writes in its effect's transaction (NewClaim.recordInTx). When Redis has no
 *  finished response the durable record decides, so a response lost in a crash is replayed, never re-executed. */
export class IdempotencyStore {
  private readonly begin;
  private readonly finishScript;
  constructor(redis: Redis, private readonly key: (...p: string[]) => string, private readonly db: Db,
    private readonly leaseMs = DEFAULT_LEASE_MS) {
    defineScript(redis, 'olIdemBegin', new URL('./begin.lua', import.meta.url), 1);
    defineScript(redis, 'olIdemFinish', new URL('./finish.lua', import.meta.url), 1);
    this.begin = script(redis, 'olIdemBegin');
    this.finishScript = script(redis, 'olIdemFinish');
  }

  static validateKey(k: string): void {
    if (!KEY_PATTERN.test(k)) throw invalidKey();
  }

  async claim(credentialId: string, idemKey: string, fingerprint: string, requestId: string): Promise<Claim> {
    const keyHash = sha256hex(idemKey);
    const recordKey = this.key('idem', credentialId, keyHash);
    const r = (await this.begin(recordKey, fingerprint, requestId, this.leaseMs)) as (string | null)[];
    const claimed = r[0] === 'new';
    if (!claimed) {
      const [state, fp, rid, status, body, headers] = r as string[];
      if (fp !== fingerprint) throw conflict(rid);
      if (state === 'done') return { kind: 'replay', response: { status: Number(status), body, headers: JSON.parse(headers) } };
    }
    // No finished response in Redis: a crash may have committed the effect but never stored its response there.
    let durable: DurableRecord | null;
    try {
      durable = await findRecord(this.db, credentialId, keyHash, IDEMPOTENCY_RETENTION_MS);
    } catch (err) {
      if (claimed) await this.settle(recordKey, requestId, null).catch(() => undefined);
      throw err;
    }
    if (durable) {
      if (durable.fingerprint !== fingerprint) {
        if (claimed) await this.settle(recordKey, requestId, null);
        throw conflict(durable.request_id);
      }
      const response = fromRecord(durable);
      // Copied back to Redis for the next retry: into our claim, or into the lapsed claimant's.
      await this.settle(recordKey, claimed ? requestId : r[2]!, response, durable.request_id);
      return { kind: 'replay', response };
    }
    if (!claimed) throw inProgress(r[2]!);
    return new NewClaim(this, { credentialId, keyHash, fingerprint, requestId }, recordKey);
  }

  /** Stores a finished response in Redis (null: releases the claim). Only the claimant's request id settles it;
   *  `originalRequestId` names the request that produced a response copied back from its durable record. */
  async settle(recordKey: string, requestId: string, res: StoredResponse | null, originalRequestId = ''): Promise<void> {
    await this.finishScript(recordKey, requestId, res ? 'store' : 'release', res?.status ?? 0, res?.body.toString() ?? '',
      JSON.stringify(res?.headers ?? {}), IDEMPOTENCY_RETENTION_MS, originalRequestId);
  }

  /** The committed record of this key and request, if any (a different request with the key is not a twin). */
  async committedIfAny(id: RecordId): Promise<DurableRecord | null> {
    const durable = await findRecord(this.db, id.credentialId, id.keyHash, IDEMPOTENCY_RETENTION_MS);
    return durable && durable.fingerprint === id.fingerprint ? durable : null;
  }

  /** The committed record of a key whose write lost to another attempt's (see NewClaim.replayCommitted). */
  async committed(id: RecordId): Promise<DurableRecord> {
    const durable = await findRecord(this.db, id.credentialId, id.keyHash, IDEMPOTENCY_RETENTION_MS);
    if (!durable) throw new Error('idempotency record vanished after a unique conflict');
    if (durable.fingerprint !== id.fingerprint) throw conflict(durable.request_id);
    return durable;
  }
}

type RecordId = { credentialId: string; keyHash: string; fingerprint: string; requestId: string };

/** A key this request claimed: the handler runs. */
export class NewClaim {
  readonly kind = 'new';
  /** The response written to the durable record (set once recordInTx ran). */
  recorded: StoredResponse | null = null;
  constructor(private readonly store: IdempotencyStore, private readonly id: RecordId, private readonly recordKey: string) {}

  /** Writes this request's record inside the effect's transaction; throws IdempotencyRecordExists (rolling the
   *  transaction back) when another attempt with the key committed first. */
  async recordInTx(tx: Tx, res: StoredResponse): Promise<void> {
    await writeRecord(tx, this.id, res, IDEMPOTENCY_RETENTION_MS);
    this.recorded = res;
  }

  /** After IdempotencyRecordExists: the winner's response, also stored in Redis for the next retry. */
  async replayCommitted(): Promise<StoredResponse> {
    try {
      const durable = await this.store.committed(this.id);
      const res = fromRecord(durable);
      await this.store.settle(this.recordKey, this.id.requestId, res, durable.request_id);
      return res;
    } catch (err) {
      await this.store.settle(this.recordKey, this.id.requestId, null);
      throw err;
    }
  }

  /** After this attempt failed with a conflict: the response of a racing attempt with the same key and request that
   *  committed first, if there is one. Its effect is what made this attempt conflict (the duplicate subscription,
   *  the number already held), so the client gets the replay, not the 409. Null when no twin committed. */
  async committedTwin(): Promise<StoredResponse | null> {
    const durable = await this.store.committedIfAny(this.id);
    if (!durable) return null;
    const res = fromRecord(durable);
    await this.store.settle(this.recordKey, this.id.requestId, res, durable.request_id);
    return res;
  }

  /** Stores a 2xx response (the recorded one when the handler wrote it), releases the key otherwise. */
  async finish(res: StoredResponse): Promise<void> {
    const ok = res.status >= 200 && res.status < 300;
    await this.store.settle(this.recordKey, this.id.requestId, ok ? this.recorded ?? res : null);
  }
}

function fromRecord(r: DurableRecord): StoredResponse {
  return { status: r.status, body: r.body, headers: r.headers };
}

function invalidKey(): DomainError {
  return new DomainError('validation_error', 'Idempotency-Key must be 1 to 255 printable ASCII characters.', {
    fields: { 'Idempotency-Key': 'must be 1 to 255 printable ASCII characters' },
  });
}

function conflict(originalRequestId: string): DomainError {
  return new DomainError('idempotency_conflict',
    'This Idempotency-Key was already used with a different request. Use a new key for a new request.',
    { fields: { conflicts_with: originalRequestId } });
}

// Same code as a body mismatch (the reference's only idempotency code); Retry-After and the field text say that
// this one is worth retrying.
function inProgress(originalRequestId: string): DomainError {
  return new DomainError('idempotency_conflict',
    'A request with this Idempotency-Key is still being processed. Retry shortly to receive its result.',
    { fields: { conflicts_with: originalRequestId, 'Idempotency-Key': 'in progress; retry after the Retry-After delay' },
      retryAfterSeconds: 1 });
}
