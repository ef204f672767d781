// The durable half of idempotency: one row per (credential, key hash) in PostgreSQL, written by the effect's own
// transaction, so "the effect happened" and "this is its response" commit as one fact.
import type { Db, Tx } from '../db.ts';

/** A response as the pipeline sends it and as a replay sends it again. */
export interface StoredResponse { status: number; body: string | Buffer; headers: Record<string, string> }

export interface DurableRecord {
  fingerprint: string;
  request_id: string;
  status: number;
  body: string;
  headers: Record<string, string>;
}

/** Another attempt with this key already committed its effect (thrown inside the transaction, so it rolls back). */
export class IdempotencyRecordExists extends Error {
  constructor() { super('an idempotency record for this key is already committed'); }
}

/** The live (under 24 hours old) record of a key, or null. */
export async function findRecord(db: Db, credentialId: string, keyHash: string, retentionMs: number): Promise<DurableRecord | null> {
  return db.oneOrNone<DurableRecord>(
    `SELECT fingerprint, request_id, status, body, headers FROM idempotency_records
      WHERE credential_id = $1 AND key_hash = $2 AND created_at > now() - make_interval(secs => $3)`,
    [credentialId, keyHash, retentionMs / 1000]);
}

/** Writes the record in the effect's transaction. A live record of the key (committed, or being committed by a
 *  concurrent transaction, which this insert waits for) throws IdempotencyRecordExists; an expired one is replaced. */
export async function writeRecord(tx: Tx, r: { credentialId: string; keyHash: string; fingerprint: string; requestId: string },
  res: StoredResponse, retentionMs: number): Promise<void> {
  const written = await tx.result(
    `INSERT INTO idempotency_records (credential_id, key_hash, fingerprint, request_id, status, body, headers)
     VALUES ($1, $2, $3, $4, $5, $6, $7:json)
     ON CONFLICT (credential_id, key_hash) DO UPDATE
       SET fingerprint = EXCLUDED.fingerprint, request_id = EXCLUDED.request_id, status = EXCLUDED.status,
           body = EXCLUDED.body, headers = EXCLUDED.headers, created_at = now()
       WHERE idempotency_records.created_at <= now() - make_interval(secs => $8)`,
    [r.credentialId, r.keyHash, r.fingerprint, r.requestId, res.status, res.body.toString(), res.headers, retentionMs / 1000]);
  if (written.rowCount === 0) throw new IdempotencyRecordExists();
}

/** Deletes records older than the retention, in batches; returns how many. */
export async function pruneIdempotencyRecords(db: Db, retentionMs: number, batch: number): Promise<number> {
  let n = 0;
  for (;;) {
    const r = await db.result(
      `DELETE FROM idempotency_records WHERE ctid IN (
         SELECT ctid FROM idempotency_records WHERE created_at <= now() - make_interval(secs => $1)
          ORDER BY created_at LIMIT $2)`, [retentionMs / 1000, batch]);
    n += r.rowCount;
    if (r.rowCount < batch) return n;
  }
}
