-- Optimize tests record the bucketing hash they assign visitors with (shared/optimize/bucketing.ts): tests that
-- existed before this migration keep version 1 (plain FNV-1a), so no enrolled visitor changes variant; the code
-- creates new tests with the current version (2: FNV-1a with a finalizer). No default: every insert says which.
ALTER TABLE optimize_tests ADD COLUMN hash_version smallint NOT NULL DEFAULT 1 CHECK (hash_version IN (1, 2));
ALTER TABLE optimize_tests ALTER COLUMN hash_version DROP DEFAULT;
