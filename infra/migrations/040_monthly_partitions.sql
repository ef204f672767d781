-- Monthly partitioning (issue 24): calls, events, webhook_delivery_attempts and sms_messages become RANGE-partitioned
-- tables with one partition per UTC month, so retention drops whole months and the hot indexes stay month-sized.
-- docs/operations.md "PostgreSQL partitions" explains the choices and what this migration's lock costs.
--
--   calls, sms_messages         partitioned by id. Every id is a UUIDv7 (shared/ids.ts), whose first 48 bits are
--                               the creation time in ms and PostgreSQL compares uuids bytewise, so a month is the id
--                               range [floor(month start), floor(next month start)). PRIMARY KEY (id) includes the
--                               partition key, so it stays, and so do the foreign keys that reference calls(id).
--   events                      partitioned by occurred_at: not every event id is a UUIDv7 (workflow cancellations
--                               used gen_random_uuid() before this migration), retention is by occurred_at, and no
--                               foreign key references events.
--   webhook_delivery_attempts   partitioned by attempted_at (id is a bigserial, not a time).
--   For the last two the keys that do not contain the partition key (events: PRIMARY KEY (id), UNIQUE (seq);
--   attempts: PRIMARY KEY (id)) are kept on every partition instead of the parent: their values come from a
--   uuid generator or a sequence, which is what makes them unique across partitions.
--
-- Converting an existing table, all in this one transaction (ACCESS EXCLUSIVE on each table until COMMIT): the table
-- is renamed <table>_legacy, a partitioned parent with the same columns, defaults, checks, indexes and foreign keys
-- takes its name, and the old table is attached as the partition from MINVALUE to the start of next month after a
-- CHECK constraint proved its rows fit (one sequential scan per table; ATTACH then scans nothing and the existing
-- indexes are attached, not rebuilt). Rows at or past that bound (a non-UUIDv7 id) move to the right partition first.
-- Foreign keys that referenced the old table are re-pointed to the parent (NOT VALID here, validated by 041 in
-- its own transaction without blocking writes). Sequences (events.seq, attempts.id) become owned by the parent, so
-- dropping the legacy partition never drops them. None of these tables has triggers.

-- A UUIDv7 made in SQL (PostgreSQL 15 has no uuidv7()): the ms timestamp over the first 48 bits of a random v4,
-- then version bits 0111.
CREATE FUNCTION ol_uuidv7(at timestamptz DEFAULT clock_timestamp()) RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
           PLACING substring(int8send(floor(extract(epoch FROM at) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1),
         'hex')::uuid
$$;

-- The smallest UUIDv7 of a millisecond (timestamp bits, every other bit zero): a month's lower bound on an id.
CREATE FUNCTION ol_uuidv7_floor(at timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT encode(substring(int8send(floor(extract(epoch FROM at) * 1000)::bigint) FROM 3) || '\x00000000000000000000'::bytea,
         'hex')::uuid
$$;

-- The partitioned tables: how each is keyed, the keys each partition carries itself, and where the converted old
-- table (the legacy partition, MINVALUE to legacy_until) ends. Read by ol_ensure_month_partition and
-- shared/partitions.
CREATE TABLE partitioned_tables (
  name text PRIMARY KEY,
  key_column text NOT NULL,
  -- uuidv7: the key is a UUIDv7 id; time: a timestamptz
  key_kind text NOT NULL CHECK (key_kind IN ('uuidv7', 'time')),
  -- Constraint definitions added to every partition (keys that cannot live on the parent).
  local_keys text[] NOT NULL DEFAULT '{}',
  legacy_until timestamptz NOT NULL
);

-- A partition bound as an SQL literal: a UUIDv7 floor or a UTC timestamp.
CREATE FUNCTION ol_partition_bound(kind text, at timestamptz) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE kind WHEN 'uuidv7' THEN quote_literal(ol_uuidv7_floor(at)::text)
                   ELSE quote_literal(to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00') END
$$;

-- Creates the partition <parent>_pYYYY_MM for the UTC month holding `month` unless one covers it already; returns
-- its name, or NULL when nothing was done. Rows of that month found in the DEFAULT partition (ids that are not
-- UUIDv7, or a month whose partition came late) are moved into it in the same transaction.
CREATE FUNCTION ol_ensure_month_partition(parent text, month timestamptz) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  t partitioned_tables;
  m_local timestamp := date_trunc('month', month AT TIME ZONE 'UTC');
  m_start timestamptz := m_local AT TIME ZONE 'UTC';
  m_end timestamptz := (m_local + interval '1 month') AT TIME ZONE 'UTC';
  part text := parent || '_p' || to_char(m_local, 'YYYY_MM');
  def text := parent || '_default';
  lo text; hi text; k text; moving boolean := false;
  r record;
  fks text[] := '{}';
BEGIN
  SELECT * INTO t FROM partitioned_tables WHERE name = parent;
  IF NOT FOUND THEN RAISE EXCEPTION '% is not a partitioned table', parent; END IF;
  IF m_start < t.legacy_until OR to_regclass(part) IS NOT NULL THEN RETURN NULL; END IF;
  -- Several workers processes run the job: one creates, the others find it done.
  PERFORM pg_advisory_xact_lock(727002);
  IF to_regclass(part) IS NOT NULL THEN RETURN NULL; END IF;
  lo := ol_partition_bound(t.key_kind, m_start);
  hi := ol_partition_bound(t.key_kind, m_end);
  IF to_regclass(def) IS NOT NULL THEN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE %I >= %s AND %I < %s)', def, t.key_column, lo, t.key_column, hi)
      INTO moving;
  END IF;
  IF moving THEN
    -- A foreign key's check on delete looks for the key in the partition the row left, not in the table, so the
    -- keys referencing this table step aside during the move and are added back (and validated) after it.
    FOR r IN SELECT c.conrelid::regclass::text AS owner, c.conname, pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
              WHERE c.contype = 'f' AND c.confrelid = parent::regclass AND c.conparentid = 0 LOOP
      fks := fks || format('ALTER TABLE %s ADD CONSTRAINT %I %s', r.owner, r.conname, r.def);
      EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.owner, r.conname);
    END LOOP;
    EXECUTE format('CREATE TEMP TABLE ol_moving (LIKE %I) ON COMMIT DROP', parent);
    EXECUTE format('WITH d AS (DELETE FROM %I WHERE %I >= %s AND %I < %s RETURNING *) INSERT INTO ol_moving SELECT * FROM d',
      def, t.key_column, lo, t.key_column, hi);
  END IF;
  EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)', part, parent, lo, hi);
  FOREACH k IN ARRAY t.local_keys LOOP
    EXECUTE format('ALTER TABLE %I ADD %s', part, k);
  END LOOP;
  IF moving THEN
    EXECUTE format('INSERT INTO %I SELECT * FROM ol_moving', parent);
    DROP TABLE ol_moving;
    FOREACH k IN ARRAY fks LOOP EXECUTE k; END LOOP;
  END IF;
  RETURN part;
END $$;

-- The one-off conversion of one table (dropped at the end of this migration).
CREATE FUNCTION ol_convert_to_partitioned(tbl text, key_column text, key_kind text, months_ahead integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  legacy text := tbl || '_legacy';
  this_month timestamp := date_trunc('month', now() AT TIME ZONE 'UTC');
  bound_at timestamptz := (this_month + interval '1 month') AT TIME ZONE 'UTC';
  bound text;
  r record;
  incoming text[] := '{}';
  self_fks text[] := '{}';
  outgoing text[] := '{}';
  parent_keys text[] := '{}';
  local_keys text[] := '{}';
  indexes text[] := '{}';
  s text;
  i integer;
BEGIN
  bound := ol_partition_bound(key_kind, bound_at);
  EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', tbl);

  -- What the old table has, read while it still has its name (so the definitions name the parent-to-be).
  FOR r IN SELECT c.conname, c.conrelid::regclass::text AS owner, pg_get_constraintdef(c.oid) AS def, c.contype,
                  c.conrelid = c.confrelid AS is_self
             FROM pg_constraint c WHERE c.confrelid = tbl::regclass AND c.contype = 'f' LOOP
    IF r.is_self THEN
      self_fks := self_fks || format('ALTER TABLE %I ADD CONSTRAINT %I %s', tbl, r.conname, r.def);
    ELSE
      incoming := incoming || format('ALTER TABLE %s ADD CONSTRAINT %I %s NOT VALID', r.owner, r.conname, r.def);
    END IF;
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.owner, r.conname);
  END LOOP;
  FOR r IN SELECT c.conname, pg_get_constraintdef(c.oid) AS def, c.contype,
                  (SELECT a.attnum FROM pg_attribute a WHERE a.attrelid = c.conrelid AND a.attname = key_column) = ANY (c.conkey) AS has_key
             FROM pg_constraint c WHERE c.conrelid = tbl::regclass AND c.contype IN ('p', 'u', 'f') LOOP
    IF r.contype = 'f' THEN
      outgoing := outgoing || format('ALTER TABLE %I ADD CONSTRAINT %I %s', tbl, r.conname, r.def);
    ELSIF r.has_key THEN
      parent_keys := parent_keys || format('ALTER TABLE %I ADD CONSTRAINT %I %s', tbl, r.conname, r.def);
    ELSE
      local_keys := local_keys || r.def;
    END IF;
  END LOOP;
  FOR r IN SELECT pg_get_indexdef(x.indexrelid) AS def FROM pg_index x
            WHERE x.indrelid = tbl::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid) LOOP
    indexes := indexes || r.def;
  END LOOP;

  -- The old table steps aside with its indexes (index names are per schema; the parent takes the old ones).
  EXECUTE format('ALTER TABLE %I RENAME TO %I', tbl, legacy);
  FOR r IN SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE x.indrelid = legacy::regclass LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname, left(r.relname, 55) || '_legacy');
  END LOOP;

  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS)'
    || ' PARTITION BY RANGE (%I)', tbl, legacy, key_column);
  -- A sequence owned by the legacy table would go with it when its partition is dropped.
  FOR r IN SELECT a.attname, pg_get_serial_sequence(legacy, a.attname) AS seq FROM pg_attribute a
            WHERE a.attrelid = legacy::regclass AND a.attnum > 0 AND NOT a.attisdropped LOOP
    IF r.seq IS NOT NULL THEN EXECUTE format('ALTER SEQUENCE %s OWNED BY %I.%I', r.seq, tbl, r.attname); END IF;
  END LOOP;
  FOREACH s IN ARRAY parent_keys || outgoing || indexes LOOP EXECUTE s; END LOOP;

  INSERT INTO partitioned_tables (name, key_column, key_kind, local_keys, legacy_until)
    VALUES (tbl, key_column, key_kind, local_keys, bound_at);
  -- The safety net: a row no month partition covers lands here instead of failing its insert.
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', tbl || '_default', tbl);
  FOREACH s IN ARRAY local_keys LOOP EXECUTE format('ALTER TABLE %I ADD %s', tbl || '_default', s); END LOOP;
  FOR i IN 0 .. months_ahead LOOP
    PERFORM ol_ensure_month_partition(tbl, (this_month + make_interval(months => 1 + i)) AT TIME ZONE 'UTC');
  END LOOP;

  -- Rows past the bound (ids that are not UUIDv7) go to their partition through the parent; the rest is proved to
  -- fit by a CHECK (the one scan), so ATTACH does not scan again.
  EXECUTE format('WITH d AS (DELETE FROM %I WHERE %I >= %s RETURNING *) INSERT INTO %I SELECT * FROM d',
    legacy, key_column, bound, tbl);
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I < %s)', legacy, legacy || '_bound', key_column, bound);
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%s)', tbl, legacy, bound);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', legacy, legacy || '_bound');

  FOREACH s IN ARRAY self_fks || incoming LOOP EXECUTE s; END LOOP;
END $$;

SELECT ol_convert_to_partitioned('calls', 'id', 'uuidv7', 3);
SELECT ol_convert_to_partitioned('sms_messages', 'id', 'uuidv7', 3);
SELECT ol_convert_to_partitioned('events', 'occurred_at', 'time', 3);
SELECT ol_convert_to_partitioned('webhook_delivery_attempts', 'attempted_at', 'time', 3);
DROP FUNCTION ol_convert_to_partitioned(text, text, text, integer);
