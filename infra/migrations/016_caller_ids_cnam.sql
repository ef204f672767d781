-- Caller IDs (external numbers an organization proves it controls by answering a verification call) and CNAM
-- registration of held numbers.

-- An external number added as a caller ID: pending until a code spoken by a verification call is confirmed.
-- Removing one keeps the row (removed_at) as history; the partial unique index lets a removed number be added again.
CREATE TABLE caller_ids (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  phone_number text NOT NULL,
  name text NOT NULL DEFAULT '',
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified')),
  -- The live code of the latest verification call: HMAC-SHA-256 (server secret 'caller_id_code', salted with the
  -- caller ID's id), never the code itself. NULL when no code is live (none sent, confirmed or locked out).
  code_hash bytea,
  code_expires_at timestamptz,
  code_attempts integer NOT NULL DEFAULT 0,
  -- Set when the live code was burned by too many wrong attempts (a new verification call clears it).
  locked_at timestamptz,
  verified_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  removed_at timestamptz
);
CREATE UNIQUE INDEX caller_ids_live ON caller_ids (organization_id, phone_number) WHERE removed_at IS NULL;
CREATE INDEX caller_ids_org ON caller_ids (organization_id, id) WHERE removed_at IS NULL;

-- Every verification call placed (the hourly bound on calls per caller ID counts these).
CREATE TABLE caller_id_verification_calls (
  id bigserial PRIMARY KEY,
  caller_id_id uuid NOT NULL REFERENCES caller_ids(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  carrier text NOT NULL,
  placed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX caller_id_verification_calls_recent ON caller_id_verification_calls (caller_id_id, placed_at);

INSERT INTO server_secrets (name, secret) VALUES ('caller_id_code', gen_random_bytes(32)) ON CONFLICT (name) DO NOTHING;

-- What the sandbox carrier "delivered" to external numbers (the speech of verification calls), readable through
-- GET /v1/sandbox/inbox by the organization whose action caused it. Sandbox only.
CREATE TABLE sandbox_inbox (
  id bigserial PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  phone_number text NOT NULL,
  channel text NOT NULL CHECK (channel IN ('voice')),
  kind text NOT NULL,
  text text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_inbox_number ON sandbox_inbox (organization_id, phone_number, id);

-- CNAM: cnam_status is pending (submitted or not yet), registered or rejected (with the provider's reason).
-- cnam_version counts display-name changes so a late provider answer about an older name is ignored.
ALTER TABLE phone_numbers
  ADD COLUMN cnam_rejection_reason text,
  ADD COLUMN cnam_version integer NOT NULL DEFAULT 0,
  ADD COLUMN cnam_updated_at timestamptz;
