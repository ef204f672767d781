-- Browser calling: two new call types, per-call browser tickets, and the default signing secrets.
--   webrtc  path A: the browser redeems a single-use ticket on the signaling WebSocket, then the carrier leg is dialed
--   room    path B (beta): the service places the carrier leg at once; the browser joins with a room token
ALTER TABLE calls DROP CONSTRAINT IF EXISTS calls_type_check;
ALTER TABLE calls ADD CONSTRAINT calls_type_check CHECK (type IN ('bridge', 'ai', 'webrtc', 'room'));

-- One ticket per browser call. Only the SHA-256 of the ticket (path A) or of the room token (path B) is stored.
-- Redemption is one UPDATE ... WHERE used_at IS NULL, so a ticket is used at most once across every process.
-- revoked_at: the ticket can no longer be redeemed (cleanup deadline, setup cancellation, end of the call).
CREATE TABLE call_tickets (
  call_id uuid PRIMARY KEY REFERENCES calls(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  kind text NOT NULL CHECK (kind IN ('webrtc', 'room')),
  token_hash bytea NOT NULL UNIQUE,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  revoked_at timestamptz,
  revoke_reason text,
  -- What went wrong while setting the call up (hangup setup modes, cleanup, abandoned socket), kept apart from the
  -- call's own outcome.
  setup_diagnostic jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX call_tickets_unused ON call_tickets (expires_at) WHERE used_at IS NULL AND revoked_at IS NULL;

-- Defaults for development: client tokens are signed with CLIENT_TOKEN_SECRET when set, else with this; room
-- tokens with LIVEKIT_API_KEY / LIVEKIT_API_SECRET when set, else with this sandbox secret.
INSERT INTO server_secrets (name, secret) VALUES ('client_token', gen_random_bytes(32)) ON CONFLICT (name) DO NOTHING;
INSERT INTO server_secrets (name, secret) VALUES ('room_token', gen_random_bytes(32)) ON CONFLICT (name) DO NOTHING;
