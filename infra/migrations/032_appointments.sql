-- Appointments (shared/appointments): an organization's bookable availability and the bookings made during calls by
-- the voice agent, by workflows or through the API.
--
--   appointment_availability  one row per organization: weekly hours (per weekday, local wall-clock intervals), the
--                             IANA time zone they are in, slot length, buffer after each booking, how far ahead
--                             slots are offered
--   appointment_feeds         the hash of each organization's iCalendar feed secret
--   appointments              the bookings; start/end in UTC, the time zone they were booked in
--
-- Double booking is impossible by construction: an exclusion constraint (btree_gist for the uuid equality) refuses
-- two booked appointments of one organization whose [start_at, blocked_until) ranges overlap, where blocked_until is
-- end_at plus the buffer in force when it was booked. Concurrent inserts for the same slot serialize on the
-- constraint; the loser inserts nothing (INSERT ... ON CONFLICT DO NOTHING) and answers slot_unavailable.
-- A sub-entity column is not here yet (docs/reference/appointments.md, "Sub-entities").
CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE TABLE appointment_availability (
  organization_id uuid PRIMARY KEY REFERENCES organizations(id),
  time_zone text NOT NULL,
  -- {"mon": [{"start": "09:00", "end": "17:00"}], "tue": [...], ...}: local wall-clock intervals, sorted, disjoint.
  weekly_hours jsonb NOT NULL,
  slot_minutes integer NOT NULL CHECK (slot_minutes BETWEEN 5 AND 480),
  buffer_minutes integer NOT NULL DEFAULT 0 CHECK (buffer_minutes BETWEEN 0 AND 240),
  max_days_ahead integer NOT NULL DEFAULT 60 CHECK (max_days_ahead BETWEEN 1 AND 365),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- The organization's iCalendar feed: only the SHA-256 of its secret URL token is kept (the URL is shown once, when
-- made); the token names the organization, so the check is one row read and a constant-time comparison.
CREATE TABLE appointment_feeds (
  organization_id uuid PRIMARY KEY REFERENCES organizations(id),
  token_hash bytea NOT NULL,
  rotated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE appointments (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  call_id uuid REFERENCES calls(id),
  contact_id uuid REFERENCES contacts(id),
  phone_number text,
  name text,
  start_at timestamptz NOT NULL,
  end_at timestamptz NOT NULL,
  blocked_until timestamptz NOT NULL,
  time_zone text NOT NULL,
  status text NOT NULL DEFAULT 'booked' CHECK (status IN ('booked', 'cancelled')),
  source text NOT NULL CHECK (source IN ('agent', 'workflow', 'api')),
  notes text,
  -- Bumped by every change the calendar feed shows (RFC 5545 SEQUENCE).
  sequence integer NOT NULL DEFAULT 0,
  cancelled_at timestamptz,
  cancel_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (end_at > start_at),
  CHECK (blocked_until >= end_at),
  CHECK ((status = 'cancelled') = (cancelled_at IS NOT NULL)),
  EXCLUDE USING gist (organization_id WITH =, tstzrange(start_at, blocked_until, '[)') WITH &&) WHERE (status = 'booked')
);
-- The list (newest first by id, the keyset) and its filters; the availability and the feed read by start time.
CREATE INDEX appointments_org ON appointments (organization_id, id);
CREATE INDEX appointments_org_start ON appointments (organization_id, start_at);
CREATE INDEX appointments_call ON appointments (call_id) WHERE call_id IS NOT NULL;
-- One booking per call by the voice agent (the call's end is applied once, but a repeat must not book twice).
CREATE UNIQUE INDEX appointments_agent_call ON appointments (call_id) WHERE source = 'agent';
