-- Transactional outbox: an event row commits with the change that caused it; the relay (workers) turns
-- committed rows into webhook deliveries.
CREATE TABLE events (
  id uuid PRIMARY KEY,
  seq bigserial NOT NULL UNIQUE,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  event_type text NOT NULL,
  data jsonb NOT NULL,
  occurred_at timestamptz NOT NULL DEFAULT now(),
  relayed_at timestamptz
);
CREATE INDEX events_pending ON events (seq) WHERE relayed_at IS NULL;
CREATE INDEX events_org ON events (organization_id, seq);
