-- What several product areas share, laid down once so each area builds on the same rows:
--   organizations.own_brand_enterprise  set by caller trust when the enterprise registration is APPROVED; read by
--                                       the account snapshot and by own-brand remediation
--   spend_charges                       every charge that is not a call (paid reputation checks, remediation, SMS),
--                                       counted in the daily spend cap and in usage (shared/spend/charges.ts)
--   number_reputation                   the cached provider evidence per owned number and carrier (caller trust
--                                       writes it, Number Health reads it)
--   opt_outs                            who asked not to be contacted on which channel (SMS STOP/START writes it,
--                                       contacts and call compliance read it)

ALTER TABLE organizations ADD COLUMN own_brand_enterprise boolean NOT NULL DEFAULT false;
DROP TRIGGER organizations_account_update ON organizations;
CREATE TRIGGER organizations_account_update AFTER UPDATE ON organizations
  FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.slug IS DISTINCT FROM NEW.slug
                     OR OLD.plan IS DISTINCT FROM NEW.plan OR OLD.own_brand_enterprise IS DISTINCT FROM NEW.own_brand_enterprise)
  EXECUTE FUNCTION ol_notify_organization_change();

-- One row per charge; (organization, kind, ref) makes a charge idempotent (the same paid check is charged once).
CREATE TABLE spend_charges (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  day date NOT NULL,
  kind text NOT NULL CHECK (kind IN ('reputation_check', 'remediation', 'sms')),
  ref text NOT NULL,
  cents integer NOT NULL CHECK (cents >= 0),
  quantity integer NOT NULL DEFAULT 1 CHECK (quantity >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, kind, ref)
);
CREATE INDEX spend_charges_org_day ON spend_charges (organization_id, day);

-- Provider evidence per number and carrier. risk_level NULL = the provider had no answer (unavailable, never
-- "no risk"); checked_at is when the provider answered.
CREATE TABLE number_reputation (
  phone_id bigint NOT NULL REFERENCES phone_numbers(id),
  carrier text NOT NULL CHECK (carrier IN ('ATT', 'TMOBILE', 'VERIZON')),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  risk_level text CHECK (risk_level IN ('LOW', 'MEDIUM', 'HIGH')),
  displayed_label text,
  provider text NOT NULL,
  checked_at timestamptz NOT NULL,
  PRIMARY KEY (phone_id, carrier)
);
CREATE INDEX number_reputation_org ON number_reputation (organization_id, phone_id);

-- Opt-outs: a live row (revoked_at NULL) means the number must not be contacted on that channel by the organization.
CREATE TABLE opt_outs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  phone_number text NOT NULL,
  channel text NOT NULL CHECK (channel IN ('sms', 'call')),
  source text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE UNIQUE INDEX opt_outs_live ON opt_outs (organization_id, phone_number, channel) WHERE revoked_at IS NULL;
