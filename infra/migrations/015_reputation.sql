-- Caller-trust reputation (shared/caller-trust/reputation): number_reputation (012) stays the cached evidence Number
-- Health reads; this adds the record of every provider lookup, the remediation cases, and the sandbox provider's
-- own memory of the remediations it granted.

-- One row per provider lookup of one number. ref names the lookup so it happens once: 'fresh:<phone_id>:<window>'
-- for a paid refresh (the same ref is the spend charge's ref), 'bg:<phone_id>:<window>' for a background refresh.
-- attempts counts the times the provider was asked under this ref (more than 1 only when a process died mid-lookup);
-- completed_at is set in the transaction that writes the evidence.
CREATE TABLE reputation_lookups (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  ref text NOT NULL UNIQUE,
  phone_id bigint NOT NULL REFERENCES phone_numbers(id),
  organization_id uuid NOT NULL REFERENCES organizations(id),
  reason text NOT NULL CHECK (reason IN ('paid', 'background')),
  provider text NOT NULL,
  attempts integer NOT NULL DEFAULT 1,
  charge_id uuid,
  started_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);
CREATE INDEX reputation_lookups_phone ON reputation_lookups (phone_id, completed_at DESC);

-- Remediation cases: open -> in_review -> resolved | rejected. At most one case per number is open or in review.
CREATE TABLE reputation_remediations (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id),
  phone_id bigint NOT NULL REFERENCES phone_numbers(id),
  phone_number text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('own_brand', 'umbrella')),
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'in_review', 'resolved', 'rejected')),
  carriers text[] NOT NULL,
  provider text NOT NULL,
  provider_ref text,
  charge_id uuid,
  cents integer NOT NULL,
  rejection_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  in_review_at timestamptz,
  closed_at timestamptz
);
CREATE INDEX reputation_remediations_org ON reputation_remediations (organization_id, id);
CREATE UNIQUE INDEX reputation_remediations_live ON reputation_remediations (phone_id) WHERE status IN ('open', 'in_review');

-- The sandbox provider's side: remediation requests it received. Its lookups consult it (a resolved request clears
-- the number's flags from then on), as a real provider remembers its own re-evaluations.
CREATE TABLE sandbox_reputation_requests (
  provider_ref uuid PRIMARY KEY,
  phone_number text NOT NULL,
  kind text NOT NULL,
  submitted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_reputation_requests_number ON sandbox_reputation_requests (phone_number);

-- The background refresh finds stale enrolled numbers by their oldest evidence.
CREATE INDEX number_reputation_checked ON number_reputation (phone_id, checked_at);
