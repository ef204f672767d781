-- After Redis lost its state the workers re-arm the webhook deliveries still owed: those of events relayed within
-- the retry window (shared/webhooks/rearm.ts), read in (relayed_at, seq) pages.
CREATE INDEX events_relayed ON events (relayed_at, seq) WHERE relayed_at IS NOT NULL;
