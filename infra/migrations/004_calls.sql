-- Calls: organization limits (guardrails), voice agents, the call record and the daily spend ledger.

-- Organization limits. channel_limit: channels held at once (bridge 2, AI 1); calls_per_minute: new calls per
-- minute; daily_spend_cap_cents: settled call spend per UTC day above which new calls are refused;
-- allow_countries: ISO countries whose (non-premium) numbers may be called besides the domestic ones;
-- max_call_minutes: call-length limit (60 by default, at most 180); content_policy: 'hipaa' pins call content
-- (recordings, transcripts, analysis) to a compliance boundary, so the API never returns it.
ALTER TABLE organizations
  ADD COLUMN channel_limit integer NOT NULL DEFAULT 10 CHECK (channel_limit >= 0),
  ADD COLUMN calls_per_minute integer NOT NULL DEFAULT 60 CHECK (calls_per_minute > 0),
  ADD COLUMN daily_spend_cap_cents bigint NOT NULL DEFAULT 10000 CHECK (daily_spend_cap_cents >= 0),
  ADD COLUMN allow_countries text[] NOT NULL DEFAULT '{}',
  ADD COLUMN max_call_minutes integer NOT NULL DEFAULT 60 CHECK (max_call_minutes BETWEEN 1 AND 180),
  ADD COLUMN content_policy text NOT NULL DEFAULT 'standard' CHECK (content_policy IN ('standard', 'hipaa'));

-- Per-number call-length limit; NULL means the organization's.
ALTER TABLE phone_numbers
  ADD COLUMN max_call_minutes integer CHECK (max_call_minutes BETWEEN 1 AND 180);

-- Voice agents (POST /v1/calls speaks with one). Deleted agents keep their row so calls still name them.
CREATE TABLE agents (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  name text NOT NULL,
  greeting text NOT NULL DEFAULT '',
  prompt text NOT NULL DEFAULT '',
  voice text NOT NULL DEFAULT 'neutral',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE INDEX agents_org ON agents (organization_id, id) WHERE deleted_at IS NULL;

-- One row per placed call. id is a UUIDv7, so ordering by id is ordering by creation. `legs` holds the state of
-- each carrier leg ({"connect": {...}, "destination": {...}}); every change to a call is one transaction that
-- locks this row, so origination, carrier progress, timers and hangups serialize on it.
CREATE TABLE calls (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  api_key_id uuid,
  user_id uuid,
  type text NOT NULL CHECK (type IN ('bridge', 'ai')),
  direction text NOT NULL DEFAULT 'outbound',
  from_number text NOT NULL,
  to_number text NOT NULL,
  connect_number text,
  phone_number_id bigint REFERENCES phone_numbers(id),
  agent_id uuid REFERENCES agents(id),
  agent jsonb,
  record boolean NOT NULL DEFAULT false,
  status text NOT NULL DEFAULT 'QUEUED' CHECK (status IN
    ('QUEUED', 'RINGING', 'ANSWERED', 'COMPLETED', 'BUSY', 'NO_ANSWER', 'VOICEMAIL', 'FAILED', 'CANCELED')),
  call_outcome text,
  failure_code text,
  failure_category text,
  disconnection_reason text,
  picked_up boolean NOT NULL DEFAULT false,
  legs jsonb NOT NULL,
  channels smallint NOT NULL,
  carrier text NOT NULL,
  -- Real seconds per carrier second (the sandbox's SANDBOX_TIME_SCALE; 1 for real carriers).
  time_scale double precision NOT NULL DEFAULT 1,
  max_duration_seconds integer NOT NULL,
  ring_timeout_seconds integer NOT NULL,
  price_cents_per_minute integer NOT NULL,
  cost_cents integer NOT NULL DEFAULT 0,
  duration_seconds integer,
  originated_at timestamptz,
  answered_at timestamptz,
  ended_at timestamptz,
  transcript jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX calls_org ON calls (organization_id, id);
-- Live calls, for the reconciler.
CREATE INDEX calls_live ON calls (updated_at) WHERE ended_at IS NULL;

-- Settled call spend per organization and UTC day (the daily spend cap reads one row).
CREATE TABLE org_daily_spend (
  organization_id uuid NOT NULL REFERENCES organizations(id),
  day date NOT NULL,
  cents bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (organization_id, day)
);
