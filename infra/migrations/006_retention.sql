-- Retention: the workers' events-retention service deletes relayed events and delivery attempts older than
-- EVENTS_RETENTION_DAYS, oldest first, in batches; these indexes let it find them without scanning.
CREATE INDEX events_occurred_at ON events (occurred_at) WHERE relayed_at IS NOT NULL;
CREATE INDEX webhook_delivery_attempts_attempted_at ON webhook_delivery_attempts (attempted_at);
