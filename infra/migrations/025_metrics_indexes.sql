-- The workers' /metrics counts the outbound messages that are not final yet (queued, sent) at most every few seconds:
-- a partial index keeps that count proportional to those messages, not to every message ever sent.
CREATE INDEX sms_messages_pending ON sms_messages (status) WHERE status IN ('queued', 'sent');
