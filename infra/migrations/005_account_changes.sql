-- Gateways cache the parts of GET /v1/account (organization, user, footprint) and drop an organization's entry
-- when it changes. Every change that can alter a snapshot NOTIFYs ol_account with the organization id, from
-- triggers, so no writer (API, workers, admin CLI, SQL by hand) can forget to. NOTIFY is delivered at commit and
-- repeated payloads within one transaction collapse into one.

CREATE FUNCTION ol_notify_account_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM pg_notify('ol_account', OLD.organization_id::text);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    PERFORM pg_notify('ol_account', NEW.organization_id::text);
  END IF;
  RETURN NULL;
END $$;

-- The footprint counts held numbers and enrolled ones.
CREATE TRIGGER phone_numbers_account_change AFTER INSERT OR DELETE ON phone_numbers
  FOR EACH ROW EXECUTE FUNCTION ol_notify_account_change();
CREATE TRIGGER phone_numbers_account_update AFTER UPDATE ON phone_numbers
  FOR EACH ROW WHEN (OLD.organization_id IS DISTINCT FROM NEW.organization_id OR OLD.status IS DISTINCT FROM NEW.status
                     OR OLD.reputation_enrolled_at IS DISTINCT FROM NEW.reputation_enrolled_at)
  EXECUTE FUNCTION ol_notify_account_change();

-- The user part of the snapshot.
CREATE TRIGGER users_account_update AFTER UPDATE OR DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION ol_notify_account_change();

-- The organization part (name, slug, plan); organizations carry their own id.
CREATE FUNCTION ol_notify_organization_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('ol_account', NEW.id::text);
  RETURN NULL;
END $$;
CREATE TRIGGER organizations_account_update AFTER UPDATE ON organizations
  FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.slug IS DISTINCT FROM NEW.slug
                     OR OLD.plan IS DISTINCT FROM NEW.plan)
  EXECUTE FUNCTION ol_notify_organization_change();
