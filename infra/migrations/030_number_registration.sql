-- Number registration (shared/number-registration): each held number's registration with the call-analytics
-- providers that label calls (the Free Caller Registry path that carriers' analytics engines read). One row per
-- number once it was first submitted; a number without a row is not_registered. version grows with every submission
-- and withdrawal, so the verdict of an older submission (its job carries the version) never overwrites a newer one.
CREATE TABLE number_registrations (
  phone_id bigint PRIMARY KEY REFERENCES phone_numbers(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  status text NOT NULL CHECK (status IN ('not_registered', 'pending', 'registered', 'rejected')),
  provider text NOT NULL,
  -- What was submitted: { business_name, ein, call_purpose, address, source, enterprise_registration_id }.
  details jsonb NOT NULL,
  rejection_code text,
  rejection_message text,
  version integer NOT NULL DEFAULT 1,
  submitted_at timestamptz NOT NULL DEFAULT now(),
  decided_at timestamptz,
  -- Set when the registration was withdrawn because the number was released (status not_registered).
  withdrawn_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((status = 'rejected') = (rejection_code IS NOT NULL))
);
CREATE INDEX number_registrations_org_status ON number_registrations (organization_id, status, phone_id);

-- Number Health reads the registration (SETUP_INCOMPLETE names a missing one): a change clears the cached evidence.
CREATE TRIGGER number_registrations_evidence AFTER INSERT OR UPDATE OR DELETE ON number_registrations
  FOR EACH ROW EXECUTE FUNCTION nh_evidence_row_changed();
