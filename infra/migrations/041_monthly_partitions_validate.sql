-- The foreign keys that 040 re-pointed to the partitioned calls (and any other partitioned table) were added NOT VALID
-- (enforced for new rows at once). Validating them here, in a transaction of its own, takes SHARE UPDATE EXCLUSIVE on
-- the referencing table and ROW SHARE on the referenced one: reads and writes go on while the rows are checked.
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.conrelid::regclass::text AS owner, c.conname FROM pg_constraint c
            WHERE c.contype = 'f' AND NOT c.convalidated
              AND c.confrelid IN (SELECT to_regclass(name) FROM partitioned_tables) LOOP
    EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', r.owner, r.conname);
  END LOOP;
END $$;
