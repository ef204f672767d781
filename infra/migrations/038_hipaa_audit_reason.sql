-- Why HIPAA mode was changed, as the person changing it said (PUT /v1/sub-entities/{id}/hipaa, PATCH with
-- hipaa_reason): kept with the audit row. Null when none was given.
ALTER TABLE sub_entity_hipaa_audit ADD COLUMN reason text;
