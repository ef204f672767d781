-- Durable idempotency records: a keyed request's response, written in the same transaction as its effect, so a retry
-- after any crash replays it instead of running again (Redis holds the fast copy and the in-progress claims).
-- One row per (credential, SHA-256 of the Idempotency-Key); kept 24 hours, then deleted by the workers' hourly
-- retention service.
CREATE TABLE idempotency_records (
  credential_id text NOT NULL,
  key_hash text NOT NULL,
  fingerprint text NOT NULL,
  request_id text NOT NULL,
  status integer NOT NULL,
  body text NOT NULL,
  headers jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (credential_id, key_hash)
);
CREATE INDEX idempotency_records_created_at ON idempotency_records (created_at);
