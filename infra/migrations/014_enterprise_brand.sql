-- Caller trust: enterprise registrations (EIN + signed Letter of Authorization, vetted by a provider) and the
-- Display Identity Record for Branded Calling.
--   enterprise_registrations  DRAFT -> PENDING_VETTING -> APPROVED | REJECTED (REJECTED -> PENDING_VETTING on resign
--                             or resubmit); deleted_at hides a deleted DRAFT or REJECTED row (kept as history)
--   enterprise_loas           the LOA PDFs (unsigned as generated, signed): bytea beside the row whose status they
--                             move, so a signature and PENDING_VETTING commit together and any gateway can serve them
--   brand_identities          one DIR per organization: draft -> submitted -> approved, rollout per network

CREATE TABLE enterprise_registrations (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  status text NOT NULL DEFAULT 'DRAFT' CHECK (status IN ('DRAFT', 'PENDING_VETTING', 'APPROVED', 'REJECTED')),
  legal_name text NOT NULL,
  ein text NOT NULL CHECK (ein ~ '^\d{2}-\d{7}$'),
  business_type text NOT NULL,
  industry text NOT NULL,
  website text NOT NULL,
  -- { line1, line2, city, state, postal_code, country }
  registered_address jsonb NOT NULL,
  -- { name, title, email, phone }
  authorized_contact jsonb NOT NULL,
  phone_numbers text[] NOT NULL,
  rejection_reasons text[] NOT NULL DEFAULT '{}',
  -- Which vetting provider has it, and how many times it went into vetting (the vetting job of an older round is
  -- ignored when it fires).
  vetting_provider text,
  vetting_round integer NOT NULL DEFAULT 0,
  -- How the LOA of the current round was signed: in_app (sign-and-submit, resign) or uploaded (submit).
  signature_method text CHECK (signature_method IN ('in_app', 'uploaded')),
  submitted_at timestamptz,
  decided_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE INDEX enterprise_registrations_org ON enterprise_registrations (organization_id, id) WHERE deleted_at IS NULL;

CREATE TABLE enterprise_loas (
  registration_id uuid NOT NULL REFERENCES enterprise_registrations(id),
  version text NOT NULL CHECK (version IN ('unsigned', 'signed')),
  pdf bytea NOT NULL,
  sha256 text NOT NULL,
  -- signed only: { signed_at, signer_name, signer_title, signature_kind, client_address, forwarded_for,
  --                unsigned_sha256 } or { uploaded_at, client_address } for an LOA signed out of band
  audit jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (registration_id, version)
);

CREATE TABLE brand_identities (
  organization_id uuid PRIMARY KEY REFERENCES organizations(id),
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'submitted', 'approved')),
  display_name text,
  call_reason text,
  -- The logo as we re-encoded it (PNG, metadata stripped), never the uploaded bytes.
  logo_png bytea,
  logo_sha256 text,
  logo_size integer,
  logo_side integer,
  -- The enterprise registration the submission was checked against.
  enterprise_id uuid REFERENCES enterprise_registrations(id),
  -- { ATT: { status, updated_at }, TMOBILE: ..., VERIZON: ... }; status pending | live
  networks jsonb NOT NULL DEFAULT '{}',
  review_provider text,
  review_round integer NOT NULL DEFAULT 0,
  submitted_at timestamptz,
  approved_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
