-- The webhook deliveries a call caused (GET .../deliveries?call_id=): call events carry the call's id as data.id.
-- Partial: only the call event types, so other events pay nothing; the predicate matches
-- shared/webhooks/subscriptions.ts (CALL_EVENT_TYPES_SQL) exactly, which the planner needs to use it.
CREATE INDEX events_call_id ON events (organization_id, (data->>'id'))
  WHERE event_type IN ('new_call', 'call_completed', 'call_no_answer', 'call_voicemail', 'call_busy', 'call_failed', 'phone_call.ended');
