-- Sub-entities (shared/sub-entities): the units an organization runs under one account (clinics of a dental group,
-- branches, client accounts of an agency), and their HIPAA mode.
--
--   sub_entities              one row per unit; hipaa_mode pins the content of its calls (transcripts, recordings,
--                             analysis) and its delivered SMS bodies to a compliance boundary
--   sub_entity_hipaa_audit    every change of hipaa_mode: who (API key or session, user), when, from which address,
--                             old and new value. Kept when the sub-entity is deleted (no foreign key to it): evidence.
--   <resource>.sub_entity_id  phone numbers, calls, contacts and SMS messages may belong to one sub-entity; a call
--                             and an SMS take their number's when placed/sent. The foreign keys refuse deleting a
--                             sub-entity something belongs to (the API answers state_conflict first).
CREATE TABLE sub_entities (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  name text NOT NULL,
  external_ref text,
  metadata jsonb NOT NULL DEFAULT '{}',
  hipaa_mode boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sub_entities_org ON sub_entities (organization_id, id);

CREATE TABLE sub_entity_hipaa_audit (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  sub_entity_id uuid NOT NULL,
  old_value boolean NOT NULL,
  new_value boolean NOT NULL,
  -- api_key or session (the console); credential_id is the key's or the session's id.
  credential_kind text NOT NULL,
  credential_id text NOT NULL,
  api_key_id uuid,
  user_id uuid,
  client_address text NOT NULL,
  changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sub_entity_hipaa_audit_entity ON sub_entity_hipaa_audit (sub_entity_id, id);

ALTER TABLE phone_numbers ADD COLUMN sub_entity_id uuid REFERENCES sub_entities(id);
ALTER TABLE calls ADD COLUMN sub_entity_id uuid REFERENCES sub_entities(id);
ALTER TABLE contacts ADD COLUMN sub_entity_id uuid REFERENCES sub_entities(id);
ALTER TABLE sms_messages ADD COLUMN sub_entity_id uuid REFERENCES sub_entities(id);
CREATE INDEX phone_numbers_sub_entity ON phone_numbers (sub_entity_id, id) WHERE sub_entity_id IS NOT NULL;
CREATE INDEX calls_sub_entity ON calls (sub_entity_id, id) WHERE sub_entity_id IS NOT NULL;
CREATE INDEX contacts_sub_entity ON contacts (sub_entity_id, id) WHERE sub_entity_id IS NOT NULL;
CREATE INDEX sms_messages_sub_entity ON sms_messages (sub_entity_id, id) WHERE sub_entity_id IS NOT NULL;
