-- Agents and documents may belong to a sub-entity (issue 23, the rest of sub-entities): sub_entity_id on each, set on
-- create/upload and (agents) on PATCH, filtered on their lists, and a key limited to a sub-entity sees only its own.
-- A document keeps its sub-entity's HIPAA boundary: its content is refused while that sub-entity is in HIPAA mode
-- (shared/sub-entities/content-policy.ts). A sub-entity with live agents or documents is not deleted (in_use).
ALTER TABLE agents ADD COLUMN sub_entity_id uuid REFERENCES sub_entities(id);
ALTER TABLE documents ADD COLUMN sub_entity_id uuid REFERENCES sub_entities(id);
CREATE INDEX agents_sub_entity ON agents (sub_entity_id, id) WHERE sub_entity_id IS NOT NULL;
CREATE INDEX documents_sub_entity ON documents (sub_entity_id, id) WHERE sub_entity_id IS NOT NULL;
