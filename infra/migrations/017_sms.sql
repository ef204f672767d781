-- SMS: messages (outbound sends and inbound replies) and the organization's A2P 10DLC texting registration.
-- opt_outs (012) is written here too: STOP inserts a live channel 'sms' row, START revokes it.

-- One texting registration per organization (brand + campaign). No row = status none. A rejected registration
-- may be submitted again (the row is reused: its status goes back to pending).
CREATE TABLE texting_registrations (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL UNIQUE REFERENCES organizations(id),
  status text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
  brand jsonb NOT NULL,
  campaign jsonb NOT NULL,
  provider text NOT NULL,
  provider_ref text,
  rejection_reason text,
  submitted_at timestamptz NOT NULL DEFAULT now(),
  decided_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- A number joins its organization's registration: one bought after approval is registered at once.
CREATE FUNCTION ol_texting_status_of_new_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT CASE r.status WHEN 'approved' THEN 'registered' ELSE r.status END INTO NEW.texting_status
    FROM texting_registrations r WHERE r.organization_id = NEW.organization_id;
  NEW.texting_status := COALESCE(NEW.texting_status, 'not_registered');
  RETURN NEW;
END $$;
CREATE TRIGGER phone_numbers_texting_status BEFORE INSERT ON phone_numbers
  FOR EACH ROW EXECUTE FUNCTION ol_texting_status_of_new_number();

CREATE TABLE sms_messages (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  direction text NOT NULL CHECK (direction IN ('outbound', 'inbound')),
  -- The organization's number and the remote party.
  local_number text NOT NULL,
  remote_number text NOT NULL,
  body text NOT NULL,
  encoding text NOT NULL CHECK (encoding IN ('GSM-7', 'UCS-2')),
  segments integer NOT NULL CHECK (segments >= 1),
  -- outbound: queued -> sent -> delivered | undelivered, or queued -> failed; inbound: received
  status text NOT NULL CHECK (status IN ('queued', 'sent', 'delivered', 'undelivered', 'failed', 'received')),
  provider text NOT NULL,
  provider_id text,
  error_message text,
  -- Automatic replies to STOP/START/HELP: sent even to a number that just opted out.
  auto_reply_to uuid REFERENCES sms_messages(id),
  keyword text,
  created_at timestamptz NOT NULL DEFAULT now(),
  sent_at timestamptz,
  delivered_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sms_messages_org ON sms_messages (organization_id, id);
CREATE INDEX sms_messages_org_remote ON sms_messages (organization_id, remote_number, id);
-- The workers' sweep looks for queued messages whose send job was lost.
CREATE INDEX sms_messages_queued ON sms_messages (created_at) WHERE status = 'queued';
