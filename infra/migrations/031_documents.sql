-- Documents: files an organization keeps with the platform (POST /v1/documents). The bytes live in the document
-- storage (shared/documents/storage.ts: local disk under DOCUMENTS_DIR by default), in a file named by the row's id;
-- the row is written after the file, so a crash between them leaves at most an orphan file (swept), never a row
-- without its file.
--   purpose  enterprise_registration: supporting documents of an enterprise registration (caller_trust scopes)
--            agent_knowledge: knowledge documents of voice agents (agents scopes)
CREATE TABLE documents (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  purpose text NOT NULL CHECK (purpose IN ('enterprise_registration', 'agent_knowledge')),
  name text NOT NULL,
  -- Detected from the bytes (never the client's claim): application/pdf, image/png, image/jpeg, text/plain.
  content_type text NOT NULL,
  size_bytes bigint NOT NULL,
  sha256 text NOT NULL,
  -- Optional attachments: an enterprise registration (purpose enterprise_registration) or an agent (agent_knowledge).
  registration_id uuid REFERENCES enterprise_registrations(id),
  agent_id uuid REFERENCES agents(id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK (registration_id IS NULL OR purpose = 'enterprise_registration'),
  CHECK (agent_id IS NULL OR purpose = 'agent_knowledge')
);
CREATE INDEX documents_org ON documents (organization_id, id);
CREATE INDEX documents_registration ON documents (registration_id, id) WHERE registration_id IS NOT NULL;
CREATE INDEX documents_agent ON documents (agent_id, id) WHERE agent_id IS NOT NULL;
