-- Workflows ("long-horizon tasks", /v1/tasks; shared/workflows): an ordered list of steps (call, sms, wait, branch)
-- run for each contact of a list. A task is the workflow (its id is the workflow_id of workflow_contact_completed);
-- a campaign is one run of it over a set of contacts (today one per task, made with it).
CREATE TABLE workflows (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  name text NOT NULL,
  from_number text NOT NULL,
  steps jsonb NOT NULL,
  -- Who created it: the steps run with that credential's bounds ({kind, key_id, user_id, is_demo, allowed_from, allowed_to}).
  principal jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workflows_org ON workflows (organization_id, id);

CREATE TABLE workflow_campaigns (
  id uuid PRIMARY KEY,
  workflow_id uuid NOT NULL REFERENCES workflows(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  status text NOT NULL CHECK (status IN ('draft', 'running', 'paused', 'cancelled', 'completed')),
  -- Grows with every start and resume: the scheduling jobs of one generation have their own ids.
  generation integer NOT NULL DEFAULT 0,
  contact_count integer NOT NULL,
  started_at timestamptz,
  completed_at timestamptz,
  cancelled_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX workflow_campaigns_workflow ON workflow_campaigns (workflow_id);

-- One row per contact of a campaign: where it is. seq counts the steps it has taken (a branch may lead back, so a
-- step index can be taken more than once); attempt counts the tries of the current step (a closed calling window,
-- the channel limit). A job (campaign, contact, seq, attempt) acts only while the row is at that seq and attempt.
CREATE TABLE workflow_contacts (
  campaign_id uuid NOT NULL REFERENCES workflow_campaigns(id),
  contact_id uuid NOT NULL REFERENCES contacts(id),
  organization_id uuid NOT NULL,
  phone_number text NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'active', 'waiting', 'in_call', 'completed', 'cancelled')),
  step_index integer NOT NULL DEFAULT 0,
  seq integer NOT NULL DEFAULT 0,
  attempt integer NOT NULL DEFAULT 0,
  -- The time the current step may run (a wait, a closed calling window); null: now.
  wake_at timestamptz,
  wait_reason text,
  call_id uuid,
  last_outcome text,
  outcome text,
  finished_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (campaign_id, contact_id)
);
CREATE INDEX workflow_contacts_state ON workflow_contacts (campaign_id, state);
CREATE INDEX workflow_contacts_call ON workflow_contacts (call_id) WHERE state = 'in_call';

-- Each step a contact took, recorded before its side effect and in the same transaction as it (the SMS or call row):
-- the unique key makes a repeated job (a crash, a duplicate) find it done instead of doing it again.
CREATE TABLE workflow_step_runs (
  campaign_id uuid NOT NULL,
  contact_id uuid NOT NULL,
  seq integer NOT NULL,
  attempt integer NOT NULL,
  step_index integer NOT NULL,
  type text NOT NULL,
  -- started (a call in progress), done, retry (a closed window or a full channel account: tried again later)
  status text NOT NULL,
  outcome text,
  ref_id uuid,
  detail text,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at timestamptz,
  PRIMARY KEY (campaign_id, contact_id, seq, attempt),
  FOREIGN KEY (campaign_id, contact_id) REFERENCES workflow_contacts(campaign_id, contact_id)
);
