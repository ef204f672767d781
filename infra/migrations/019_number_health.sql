-- Number Health: Number Sets (caller-ID selection), spam-test sessions with their attempts and audited
-- observations, a per-number summary of handset evidence (kept by the observation writes, so fleet reads stay
-- cheap), teams on numbers (the team_id filter and TEAM scope), and inbound calls (the sandbox simulates them).

-- A team is a label the organization gives its numbers (no team resource exists yet); NULL: no team.
ALTER TABLE phone_numbers ADD COLUMN team_id text;
CREATE INDEX phone_numbers_org_team ON phone_numbers (organization_id, team_id, id) WHERE team_id IS NOT NULL;
CREATE INDEX phone_numbers_org_area ON phone_numbers (organization_id, area_code, id);

-- Inbound calls (a tester calling an owned number): type inbound, direction inbound.
ALTER TABLE calls DROP CONSTRAINT IF EXISTS calls_type_check;
ALTER TABLE calls ADD CONSTRAINT calls_type_check CHECK (type IN ('bridge', 'ai', 'webrtc', 'room', 'inbound'));
CREATE INDEX calls_org_inbound ON calls (organization_id, to_number, from_number, created_at) WHERE direction = 'inbound';

CREATE TABLE number_sets (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  name text NOT NULL,
  use_case text NOT NULL DEFAULT '',
  identification_guidance text NOT NULL DEFAULT '',
  -- Bumped whenever the set's members or any member's evidence inputs change: a gateway keeps each set's
  -- selection ranking in memory and recomputes it when this moved (shared/number-health/resolve.ts).
  version bigint NOT NULL DEFAULT 0,
  created_by_user_id uuid NOT NULL REFERENCES users(id),
  updated_by_user_id uuid NOT NULL REFERENCES users(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX number_sets_org ON number_sets (organization_id, id);

-- Members are upserted, never deleted: RETIRED only takes a number out of selection.
CREATE TABLE number_set_members (
  set_id uuid NOT NULL REFERENCES number_sets(id),
  phone_id bigint NOT NULL REFERENCES phone_numbers(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  role text NOT NULL CHECK (role IN ('PRIMARY', 'ALTERNATE')),
  state text NOT NULL CHECK (state IN ('ACTIVE', 'STANDBY', 'PREPARING', 'RETIRED')),
  outbound_enabled boolean NOT NULL,
  priority integer NOT NULL CHECK (priority BETWEEN 0 AND 10000),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (set_id, phone_id)
);
CREATE INDEX number_set_members_phone ON number_set_members (organization_id, phone_id);

-- A spam-test session: one tester, a mode, and the queue of numbers saved at creation.
CREATE TABLE spam_test_sessions (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  created_by_user_id uuid NOT NULL REFERENCES users(id),
  tester_alias text NOT NULL,
  tester_phone text NOT NULL,
  tester_carrier text NOT NULL CHECK (tester_carrier IN ('ATT', 'TMOBILE', 'VERIZON', 'OTHER', 'UNKNOWN')),
  tester_consented boolean NOT NULL,
  mode text NOT NULL CHECK (mode IN ('RAPID_AUDIT', 'HUMAN_READINESS', 'CONNECTIVITY_QA')),
  scope_kind text NOT NULL CHECK (scope_kind IN ('ALL', 'TEAM', 'NUMBER_SET', 'AREA_CODE', 'FLAGGED', 'NEEDS_DATA')),
  scope_value text,
  compare_alternates boolean NOT NULL DEFAULT false,
  phone_ids bigint[] NOT NULL,
  status text NOT NULL CHECK (status IN ('ACTIVE', 'PAUSED', 'COMPLETED', 'CANCELLED')),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX spam_test_sessions_org ON spam_test_sessions (organization_id, id);

-- One attempt per attached call (a call is evidence once). The observation lives on the attempt; corrections
-- keep their before/after in spam_test_observation_audit.
CREATE TABLE spam_test_attempts (
  id uuid PRIMARY KEY,
  session_id uuid NOT NULL REFERENCES spam_test_sessions(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  phone_id bigint NOT NULL REFERENCES phone_numbers(id),
  call_id uuid NOT NULL UNIQUE REFERENCES calls(id),
  created_by_user_id uuid NOT NULL REFERENCES users(id),
  created_at timestamptz NOT NULL,
  outcome text CHECK (outcome IN ('CLEAN', 'NUMBER_ONLY', 'LOCATION', 'WRONG_NAME', 'SPAM', 'SCAM', 'BLOCKED', 'NO_RING', 'UNKNOWN')),
  observed_label text,
  handset jsonb,
  observed_at timestamptz,
  observed_by_user_id uuid REFERENCES users(id),
  callback_verified boolean NOT NULL DEFAULT false,
  callback_attested_by_user_id uuid REFERENCES users(id),
  callback_attested_at timestamptz
);
CREATE INDEX spam_test_attempts_session ON spam_test_attempts (session_id, created_at);
CREATE INDEX spam_test_attempts_phone ON spam_test_attempts (organization_id, phone_id);

CREATE TABLE spam_test_observation_audit (
  id bigserial PRIMARY KEY,
  attempt_id uuid NOT NULL REFERENCES spam_test_attempts(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  user_id uuid NOT NULL REFERENCES users(id),
  before jsonb,
  after jsonb NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX spam_test_observation_audit_attempt ON spam_test_observation_audit (attempt_id, id);

-- Handset evidence per number, recomputed from its attempts whenever an observation is written.
CREATE TABLE number_health_summaries (
  phone_id bigint PRIMARY KEY REFERENCES phone_numbers(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  qualifying_calls integer NOT NULL,
  consented_testers integer NOT NULL,
  active_days integer NOT NULL,
  clean_carriers text[] NOT NULL,
  callback_verified boolean NOT NULL,
  last_qualifying_at timestamptz,
  -- Latest handset observation per carrier (human modes): {"ATT": {outcome, observed_label, observed_at, ...}}.
  latest_by_carrier jsonb NOT NULL,
  updated_at timestamptz NOT NULL
);

-- The evidence of each number as set resolution last computed it, so resolving a large set reads one small row
-- per member. A row is usable while evidence_state is set and valid_until (the next time the evidence can change
-- with time alone: a provider answer going stale, evidence stopping being recent) has not passed. Every change to
-- what the rule reads bumps generation and clears the row (triggers below); a reader writes back only when the
-- generation it read before reading the facts is still current, so a concurrent change is never cached over.
CREATE TABLE number_evidence_cache (
  phone_id bigint PRIMARY KEY REFERENCES phone_numbers(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  generation bigint NOT NULL DEFAULT 0,
  evidence_state text,
  tier smallint,
  health_warning text,
  recommended_action text,
  valid_until timestamptz
);

CREATE FUNCTION nh_evidence_changed(p_phone bigint, p_org uuid) RETURNS void LANGUAGE sql AS $$
  INSERT INTO number_evidence_cache (phone_id, organization_id, generation) VALUES (p_phone, p_org, 1)
  ON CONFLICT (phone_id) DO UPDATE SET generation = number_evidence_cache.generation + 1, evidence_state = NULL, tier = NULL;
  UPDATE number_sets SET version = version + 1
   WHERE id IN (SELECT set_id FROM number_set_members WHERE organization_id = p_org AND phone_id = p_phone);
$$;

CREATE FUNCTION nh_evidence_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM nh_evidence_changed(OLD.phone_id, OLD.organization_id);
  ELSE
    PERFORM nh_evidence_changed(NEW.phone_id, NEW.organization_id);
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION nh_evidence_phone_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM nh_evidence_changed(NEW.id, NEW.organization_id);
  RETURN NULL;
END $$;

CREATE TRIGGER number_reputation_evidence AFTER INSERT OR UPDATE OR DELETE ON number_reputation
  FOR EACH ROW EXECUTE FUNCTION nh_evidence_row_changed();
CREATE TRIGGER number_health_summaries_evidence AFTER INSERT OR UPDATE ON number_health_summaries
  FOR EACH ROW EXECUTE FUNCTION nh_evidence_row_changed();
CREATE TRIGGER phone_numbers_evidence AFTER UPDATE ON phone_numbers
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.cnam_display_name IS DISTINCT FROM NEW.cnam_display_name
                     OR OLD.cnam_status IS DISTINCT FROM NEW.cnam_status OR OLD.reputation_enrolled_at IS DISTINCT FROM NEW.reputation_enrolled_at
                     OR OLD.organization_id IS DISTINCT FROM NEW.organization_id)
  EXECUTE FUNCTION nh_evidence_phone_changed();
