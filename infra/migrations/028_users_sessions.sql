-- Issue 22: users who sign in. Every user has a role (shared/users/roles.ts maps roles onto scopes), a password hash
-- (scrypt, shared/users/passwords.ts; NULL while an invitation is pending) and disabled_at (a removed member: the row
-- stays, because calls, Number Health records and keys refer to it).
--
-- One email = one active user across the platform: a person signs in with an email alone, so the email names exactly
-- one live account. Emails are compared case-insensitively. A removed (disabled) user no longer holds the email, so
-- the same person can be invited again, here or elsewhere.
ALTER TABLE users
  ADD COLUMN role text NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'admin', 'developer', 'agent', 'viewer')),
  ADD COLUMN password_hash text,
  ADD COLUMN disabled_at timestamptz;
-- Existing users were made by `admin bootstrap` as their organization's owner: the default above makes them owners.
-- New rows must say their role.
ALTER TABLE users ALTER COLUMN role DROP DEFAULT;

-- Existing rows that share an email across organizations (possible before this migration): the oldest keeps it, the
-- others are disabled (they never could sign in; their keys keep working).
UPDATE users u SET disabled_at = now()
 WHERE EXISTS (SELECT 1 FROM users o WHERE lower(o.email) = lower(u.email) AND (o.created_at, o.id) < (u.created_at, u.id));

CREATE UNIQUE INDEX users_email_active ON users (lower(email)) WHERE disabled_at IS NULL;
-- The old per-organization uniqueness was case-sensitive and counted removed users: replaced.
ALTER TABLE users DROP CONSTRAINT users_organization_id_email_key;
CREATE INDEX users_org ON users (organization_id, created_at, id);

-- Sign-in sessions. The cookie holds 32 random bytes; only their SHA-256 is stored (token_hash). The CSRF token is
-- derived from the cookie's secret and only its hash is stored too. last_seen_at is written at most once a minute
-- per gateway; a session is live while revoked_at IS NULL, now() < expires_at (absolute) and
-- now() < last_seen_at + the idle timeout.
CREATE TABLE sessions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  token_hash bytea NOT NULL UNIQUE,
  csrf_hash bytea NOT NULL,
  user_id uuid NOT NULL REFERENCES users(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  ip text,
  user_agent text
);
CREATE INDEX sessions_user ON sessions (user_id) WHERE revoked_at IS NULL;

-- Failed sign-ins, for the lockout (per email and per client address, in a sliding window). Old rows are deleted as
-- new ones are written.
CREATE TABLE signin_failures (
  id bigserial PRIMARY KEY,
  email text NOT NULL,
  address text NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX signin_failures_email ON signin_failures (email, at);
CREATE INDEX signin_failures_address ON signin_failures (address, at);

-- One-time tokens sent by email: invitations and password resets. Only the SHA-256 of the token is stored.
CREATE TABLE user_tokens (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES users(id),
  kind text NOT NULL CHECK (kind IN ('invitation', 'password_reset')),
  token_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX user_tokens_user ON user_tokens (user_id, kind);

-- Keys: last use (written at most once a minute per key per gateway).
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;

-- The sandbox inbox also receives email (invitations and password resets when SMTP_URL is unset); phone_number holds
-- the address an entry was delivered to, a number or an email address.
ALTER TABLE sandbox_inbox DROP CONSTRAINT sandbox_inbox_channel_check;
ALTER TABLE sandbox_inbox ADD CONSTRAINT sandbox_inbox_channel_check CHECK (channel IN ('voice', 'email'));
ALTER TABLE sandbox_inbox ADD COLUMN subject text;
