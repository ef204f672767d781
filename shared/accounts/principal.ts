import type { Scope } from '../scopes.ts';
import type { Role } from '../users/roles.ts';

/** Who is calling: the authenticated credential, resolved once per request. */
export interface Principal {
  /** session: a signed-in user of the console (cookie ol_session); keyId is then the session's id. */
  kind: 'api_key' | 'client_token' | 'session';
  keyId: string;
  organizationId: string;
  userId: string | null;
  /** The role of the credential's user (null: an organization key without a user). */
  role?: Role | null;
  /** calls:read shows only the calls this user placed (an agent's credential: shared/users/roles.ts). */
  ownCallsOnly?: boolean;
  scopes: ReadonlySet<Scope>;
  isDemo: boolean;
  /** Ceiling of caller IDs and destinations; empty means any number the organization owns / any destination. */
  allowedFrom: readonly string[];
  allowedTo: readonly string[];
  /** The one sub-entity this credential is limited to (an API key made with sub_entity_id, and the client tokens it
   *  mints): it sees and touches only that sub-entity's resources (shared/sub-entities/limit.ts). Absent or null: the
   *  whole organization. */
  subEntityId?: string | null;
  /** Requests per minute for this credential. */
  rateLimit: number;
  /** What Idempotency-Keys are scoped to: the API key, or one client token (a token never replays its key's
   *  responses, nor another token's). Absent: keyId. */
  credentialId?: string;
}

export const DEFAULT_RATE_LIMIT = 600;
export const DEMO_RATE_LIMIT = 120;
