-- Daily spend cap over calls in progress: every call admitted since this migration records the money its
-- admission reserved under the cap (a bound on what it can cost; NULL for older calls, which are unbounded).
-- The reconciler and the gateway rebuild Redis's per-organization counters from the live calls of one
-- organization and day, hence the partial index.
ALTER TABLE calls ADD COLUMN spend_reserved_cents integer CHECK (spend_reserved_cents >= 0);
CREATE INDEX calls_org_live ON calls (organization_id, created_at) WHERE ended_at IS NULL;
