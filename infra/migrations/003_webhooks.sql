-- Webhook subscriptions and the log of every delivery attempt. The relay (workers) reads committed rows of
-- `events` (002) and enqueues one delivery job per matching active subscription.

CREATE TABLE webhook_subscriptions (
  -- whsub_<random>; seq orders the list (keyset pagination) by creation.
  id text PRIMARY KEY,
  seq bigserial NOT NULL UNIQUE,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  webhook_url text NOT NULL,
  event_type text NOT NULL,
  workflow_id text,
  campaign_id text,
  -- Standard Webhooks signing secret (whsec_<base64>); shown to the caller once, kept to sign deliveries.
  secret text NOT NULL,
  -- active -> disabled (the receiver answered 410 Gone); deleted_at marks DELETE (rows kept for the attempt log).
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  disabled_reason text,
  disabled_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
-- The relay's fan-out look-up: live subscriptions of one organization to one event type.
CREATE INDEX webhook_subscriptions_match ON webhook_subscriptions (organization_id, event_type)
  WHERE status = 'active' AND deleted_at IS NULL;
CREATE INDEX webhook_subscriptions_org ON webhook_subscriptions (organization_id, seq) WHERE deleted_at IS NULL;

-- One row per HTTP attempt. webhook_id is the delivery id (the webhook-id header), the same on every retry.
CREATE TABLE webhook_delivery_attempts (
  id bigserial PRIMARY KEY,
  subscription_id text NOT NULL REFERENCES webhook_subscriptions(id),
  organization_id uuid NOT NULL,
  webhook_id text NOT NULL,
  event_id uuid NOT NULL,
  event_type text NOT NULL,
  attempt integer NOT NULL,
  -- succeeded; retrying (another attempt is scheduled at next_attempt_at); failed (final: attempts exhausted,
  -- or the receiver answered 410 and the subscription was disabled)
  outcome text NOT NULL CHECK (outcome IN ('succeeded', 'retrying', 'failed')),
  response_status integer,
  latency_ms integer NOT NULL,
  error text,
  attempted_at timestamptz NOT NULL,
  next_attempt_at timestamptz
);
CREATE INDEX webhook_delivery_attempts_sub ON webhook_delivery_attempts (subscription_id, id);
CREATE INDEX webhook_delivery_attempts_delivery ON webhook_delivery_attempts (webhook_id);

-- Numbers still provisioning: the workers' sweep re-enqueues provisioning jobs that were lost.
CREATE INDEX phone_numbers_provisioning ON phone_numbers (created_at) WHERE status = 'PROVISIONING';
