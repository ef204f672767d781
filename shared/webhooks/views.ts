// Webhook subscriptions and their delivery attempts as the API shows them: response schemas and views.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import type { AttemptRow, SubscriptionRow } from './subscriptions.ts';

export const SubscriptionResponse = Type.Object({
  id: Type.String({ description: 'The subscription id (fixed prefix whsub_).' }),
  webhook_url: Type.String({ format: 'uri', description: 'Where events are POSTed.' }),
  event_type: Type.String({ description: 'The event type delivered to this URL.' }),
  workflow_id: Nullable(Type.String(), 'Only events of this workflow are delivered (a task id); null: no such filter.'),
  campaign_id: Nullable(Type.String(), 'Only events of this campaign are delivered; null: no such filter.'),
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled')],
    { description: 'active, or disabled after the receiver answered 410 Gone (turn it back on with .../enable).' }),
  disabled_reason: Nullable(Type.String(), 'Why it was disabled; null while active.'),
  disabled_at: Nullable(Type.String({ format: 'date-time' }), 'When it was disabled; null while active.'),
  created_at: Type.String({ format: 'date-time', description: 'When the subscription was created.' }),
}, { description: 'A webhook subscription.' });

export const CreatedSubscriptionResponse = Type.Composite([SubscriptionResponse, Type.Object({
  secret: Type.String({ description: 'Standard Webhooks signing secret (whsec_...). Shown only in this response: store it.' }),
})], { description: 'The new subscription with its signing secret.' });

export const AttemptResponse = Type.Object({
  id: Type.Integer({ description: 'The attempt id.' }),
  webhook_id: Type.String({ description: 'Delivery id: the webhook-id header, the same on every retry of one delivery.' }),
  event_id: Type.String({ format: 'uuid', description: 'The event delivered.' }),
  event_type: Type.String({ description: 'The event\'s type.' }),
  attempt: Type.Integer({ minimum: 1, description: 'Which attempt of this delivery (1 to 14).' }),
  outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('retrying'), Type.Literal('failed')],
    { description: 'succeeded (a 2xx), retrying (another attempt is scheduled) or failed (no more attempts).' }),
  response_status: Nullable(Type.Integer(), 'The receiver\'s HTTP status; null without a response.'),
  latency_ms: Type.Integer({ description: 'How long the attempt took.' }),
  error: Nullable(Type.String(), 'What went wrong (e.g. "HTTP 500", "timeout after 10000 ms"); null on success.'),
  attempted_at: Type.String({ format: 'date-time', description: 'When the attempt was made.' }),
  next_attempt_at: Nullable(Type.String({ format: 'date-time' }), 'When the next attempt is due; null when none is.'),
  request: Nullable(Type.Object({
    headers: Type.Record(Type.String(), Type.String(), { description: 'The headers sent: content-type, webhook-id, webhook-timestamp, webhook-signature, user-agent.' }),
    body: Type.String({ description: 'The body sent, exactly (the signed bytes).' }),
  }), 'What this attempt sent; null for attempts logged before the platform kept it.'),
  response: Nullable(Type.Object({
    content_type: Nullable(Type.String(), 'The answer\'s Content-Type header.'),
    body: Type.String({ description: 'The first 2 KiB of the answer\'s body, as UTF-8.' }),
    truncated: Type.Boolean({ description: 'Whether the body was longer than what is kept.' }),
  }), 'What the receiver answered; null when no answer came (timeout, refused connection) or for attempts logged before the platform kept it.'),
}, { description: 'One delivery attempt, with what it sent and what came back.' });

export const TestDeliveryResponse = Type.Object({
  webhook_id: Type.String({ description: 'The delivery id (the webhook-id header); find its attempts with GET .../deliveries?webhook_id=.' }),
  event_id: Type.String({ format: 'uuid', description: 'The test event\'s id (the body\'s id).' }),
  event_type: Type.Literal('webhook.test', { description: 'Always webhook.test: never a real event type, so a receiver can tell it apart.' }),
  subscription_id: Type.String({ description: 'The subscription it is delivered to.' }),
  payload: Type.Object({}, { additionalProperties: true,
    description: 'The exact JSON body the receiver gets: {id, event_type: "webhook.test", occurred_at, data: {test: true, subscription_id, subscribed_event_type, message}}.' }),
}, { description: 'A test delivery, queued.' });

/** The API shape of a subscription; the secret only appears in the creation response. */
export function subscriptionView(r: SubscriptionRow): Static<typeof SubscriptionResponse> {
  return {
    id: r.id,
    webhook_url: r.webhook_url,
    event_type: r.event_type,
    workflow_id: r.workflow_id,
    campaign_id: r.campaign_id,
    status: r.status,
    disabled_reason: r.disabled_reason,
    disabled_at: r.disabled_at ? r.disabled_at.toISOString() : null,
    created_at: r.created_at.toISOString(),
  };
}

export function attemptView(r: AttemptRow): Static<typeof AttemptResponse> {
  return {
    id: r.id,
    webhook_id: r.webhook_id,
    event_id: r.event_id,
    event_type: r.event_type,
    attempt: r.attempt,
    outcome: r.outcome,
    response_status: r.response_status,
    latency_ms: r.latency_ms,
    error: r.error,
    attempted_at: r.attempted_at.toISOString(),
    next_attempt_at: r.next_attempt_at ? r.next_attempt_at.toISOString() : null,
    request: r.request_body === null || r.request_body === undefined ? null : { headers: r.request_headers ?? {}, body: r.request_body },
    response: r.response_body === null || r.response_body === undefined ? null
      : { content_type: r.response_content_type, body: r.response_body, truncated: r.response_body_truncated === true },
  };
}
