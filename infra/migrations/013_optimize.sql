-- Optimize: website A/B tests through one script tag.
--   optimize_properties      a registered website (one per domain per organization); public_key identifies it to the
--                            tag and the collector; verified_at is set the first time the tag loads from that domain
--   optimize_tests           a test and its state (shared/optimize/states.ts documents the moves)
--   optimize_variants        a test's variants; exactly one control per test
--   optimize_assignments     which variant each enrolled visitor got (server-computed, sticky); conversions read it
--   optimize_conversions     tag goals (source tag) and API conversions (source api); `counted` marks a visitor's
--                            first conversion of a test, the one the results count (revenue sums every row)
--   optimize_daily_counts    per test, variant and UTC day: impressions, conversions, revenue; feeds the results
--   optimize_rollup_batches  Redis counter batches already applied: the rollup is exactly-once across crashes

CREATE TABLE optimize_properties (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  domain text NOT NULL,
  name text NOT NULL,
  public_key text NOT NULL UNIQUE,
  verified_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, domain)
);

CREATE TABLE optimize_tests (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  property_id uuid NOT NULL REFERENCES optimize_properties(id),
  name text NOT NULL,
  page_url text NOT NULL,
  hypothesis text,
  goal jsonb NOT NULL,
  status text NOT NULL CHECK (status IN ('draft', 'running', 'paused', 'completed', 'shipped', 'archived')),
  traffic_split numeric NOT NULL CHECK (traffic_split >= 0.05 AND traffic_split <= 1),
  winner_variant_id uuid,
  shipped_variant_id uuid,
  started_at timestamptz,
  completed_at timestamptz,
  shipped_at timestamptz,
  archived_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX optimize_tests_org ON optimize_tests (organization_id, id);
CREATE INDEX optimize_tests_property ON optimize_tests (property_id) WHERE status IN ('running', 'shipped', 'archived');

CREATE TABLE optimize_variants (
  id uuid PRIMARY KEY,
  test_id uuid NOT NULL REFERENCES optimize_tests(id),
  position integer NOT NULL,
  name text NOT NULL,
  is_control boolean NOT NULL,
  weight numeric NOT NULL CHECK (weight > 0),
  ops jsonb NOT NULL,
  redirect_url text,
  UNIQUE (test_id, position)
);
CREATE UNIQUE INDEX optimize_variants_one_control ON optimize_variants (test_id) WHERE is_control;

CREATE TABLE optimize_assignments (
  test_id uuid NOT NULL REFERENCES optimize_tests(id),
  visitor_id text NOT NULL,
  variant_id uuid NOT NULL REFERENCES optimize_variants(id),
  assigned_at timestamptz NOT NULL,
  PRIMARY KEY (test_id, visitor_id)
);

CREATE TABLE optimize_conversions (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  test_id uuid NOT NULL REFERENCES optimize_tests(id),
  variant_id uuid NOT NULL REFERENCES optimize_variants(id),
  visitor_id text NOT NULL,
  source text NOT NULL CHECK (source IN ('tag', 'api')),
  goal_type text,
  value_cents bigint NOT NULL DEFAULT 0,
  currency text NOT NULL DEFAULT 'USD',
  metadata jsonb NOT NULL DEFAULT '{}',
  order_id text,
  counted boolean NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX optimize_conversions_test ON optimize_conversions (test_id, id);
CREATE UNIQUE INDEX optimize_conversions_order ON optimize_conversions (test_id, order_id) WHERE order_id IS NOT NULL;
CREATE UNIQUE INDEX optimize_conversions_counted ON optimize_conversions (test_id, visitor_id) WHERE counted;

CREATE TABLE optimize_daily_counts (
  test_id uuid NOT NULL REFERENCES optimize_tests(id),
  variant_id uuid NOT NULL REFERENCES optimize_variants(id),
  day date NOT NULL,
  impressions bigint NOT NULL DEFAULT 0,
  conversions bigint NOT NULL DEFAULT 0,
  revenue_cents bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (test_id, variant_id, day)
);

CREATE TABLE optimize_rollup_batches (
  id text PRIMARY KEY,
  impressions bigint NOT NULL,
  conversions bigint NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);
