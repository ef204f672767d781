-- Keys limited to one sub-entity (shared/sub-entities/limit.ts): a key with sub_entity_id sees and touches only that
-- sub-entity's numbers, calls, contacts, SMS and appointments; client tokens minted from it inherit the limit. NULL: a
-- key of the whole organization. The foreign key refuses deleting a sub-entity a key is limited to.
ALTER TABLE api_keys ADD COLUMN sub_entity_id uuid REFERENCES sub_entities(id);
