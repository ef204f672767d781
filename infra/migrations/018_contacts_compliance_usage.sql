-- Contacts and call compliance, usage and plans:
--   contacts                 the organization's people (one live contact per number), with an optional IANA timezone
--   contact_consents         consent records per contact and channel (captured_at, revoked_at): kept as evidence,
--                            never deleted
--   dnc_numbers              the organization's internal Do-Not-Call list (removal keeps the row, removed_at)
--   compliance_policies      the organization's calling rules; no row = every rule off (shared/compliance)
--   organizations.voice_minutes_included / subscription_active   the organization's plan (admin CLI)
-- opt_outs (012) holds the call and SMS opt-outs.

CREATE TABLE contacts (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  phone_number text NOT NULL,
  name text NOT NULL DEFAULT '',
  timezone text,
  tags text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE UNIQUE INDEX contacts_live_number ON contacts (organization_id, phone_number) WHERE deleted_at IS NULL;
CREATE INDEX contacts_org ON contacts (organization_id, id) WHERE deleted_at IS NULL;

CREATE TABLE contact_consents (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  contact_id uuid NOT NULL REFERENCES contacts(id),
  channel text NOT NULL CHECK (channel IN ('call', 'sms')),
  source text NOT NULL,
  captured_at timestamptz NOT NULL,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX contact_consents_contact ON contact_consents (contact_id, channel) WHERE revoked_at IS NULL;

CREATE TABLE dnc_numbers (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  phone_number text NOT NULL,
  reason text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  removed_at timestamptz
);
CREATE UNIQUE INDEX dnc_numbers_live ON dnc_numbers (organization_id, phone_number) WHERE removed_at IS NULL;
CREATE INDEX dnc_numbers_org ON dnc_numbers (organization_id, id) WHERE removed_at IS NULL;

CREATE TABLE compliance_policies (
  organization_id uuid PRIMARY KEY REFERENCES organizations(id),
  window_enabled boolean NOT NULL DEFAULT false,
  window_start text NOT NULL DEFAULT '08:00' CHECK (window_start ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'),
  window_end text NOT NULL DEFAULT '21:00' CHECK (window_end ~ '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$'),
  days_enabled boolean NOT NULL DEFAULT false,
  allowed_days text[] NOT NULL DEFAULT '{mon,tue,wed,thu,fri,sat}',
  frequency_enabled boolean NOT NULL DEFAULT false,
  max_calls integer NOT NULL DEFAULT 3 CHECK (max_calls BETWEEN 1 AND 1000),
  period_hours integer NOT NULL DEFAULT 24 CHECK (period_hours BETWEEN 1 AND 8760),
  consent_required boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (window_start < window_end)
);

-- Calls to one number in a rolling period (frequency rule, a contact's call history). Time ranges of an
-- organization's calls (usage, included minutes) use calls_org: ids are UUIDv7 of created_at.
CREATE INDEX calls_org_to_created ON calls (organization_id, to_number, created_at);

-- The plan: NULL included minutes = no minute limit; a new organization is active with no limit.
ALTER TABLE organizations ADD COLUMN voice_minutes_included integer CHECK (voice_minutes_included >= 0);
ALTER TABLE organizations ADD COLUMN subscription_active boolean NOT NULL DEFAULT true;
