-- Tenancy, credentials and owned phone numbers.

CREATE TABLE server_secrets (
  name text PRIMARY KEY,
  secret bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- Signs pagination cursors; shared by every gateway replica through the database.
INSERT INTO server_secrets (name, secret) VALUES ('cursor', gen_random_bytes(32));

CREATE TABLE organizations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  slug text NOT NULL UNIQUE,
  plan text NOT NULL DEFAULT 'sandbox',
  owner_user_id uuid,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  email text NOT NULL,
  name text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, email)
);
ALTER TABLE organizations ADD FOREIGN KEY (owner_user_id) REFERENCES users(id);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  user_id uuid REFERENCES users(id),
  name text NOT NULL DEFAULT 'default',
  -- First characters of the plaintext, for display only; the key itself is stored as its SHA-256 hash.
  display_prefix text NOT NULL,
  key_hash bytea NOT NULL UNIQUE,
  scopes text[] NOT NULL,
  allowed_from text[] NOT NULL DEFAULT '{}',
  allowed_to text[] NOT NULL DEFAULT '{}',
  is_demo boolean NOT NULL DEFAULT false,
  rate_limit_per_minute integer CHECK (rate_limit_per_minute > 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_org ON api_keys (organization_id);

CREATE TABLE phone_numbers (
  id bigserial PRIMARY KEY,
  phone_number text NOT NULL,
  name text NOT NULL,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  user_id uuid NOT NULL REFERENCES users(id),
  provider text NOT NULL DEFAULT 'sandbox',
  -- PROVISIONING -> ACTIVE -> RELEASED; released rows are kept as history.
  status text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('PROVISIONING', 'ACTIVE', 'RELEASED')),
  iso_country text NOT NULL,
  area_code text NOT NULL DEFAULT '',
  reputation_enrolled_at timestamptz,
  cnam_display_name text NOT NULL DEFAULT '',
  cnam_status text NOT NULL DEFAULT 'pending',
  texting_status text NOT NULL DEFAULT 'not_registered',
  created_at timestamptz NOT NULL DEFAULT now(),
  activated_at timestamptz,
  released_at timestamptz
);
-- A number is held by at most one organization at a time; history rows (released) do not count.
CREATE UNIQUE INDEX phone_numbers_held ON phone_numbers (phone_number) WHERE status <> 'RELEASED';
CREATE INDEX phone_numbers_org ON phone_numbers (organization_id, id);
