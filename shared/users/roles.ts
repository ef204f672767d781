// The one table of what each role may do, in the reference's scopes. A session carries its user's role's scopes; a
// key a user makes carries at most them (and is cut down to them when the role later narrows: shared/accounts/keys.ts).
import { SCOPES, type Scope } from '../scopes.ts';

export const ROLES = ['owner', 'admin', 'developer', 'agent', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
export const isRole = (s: string): s is Role => (ROLES as readonly string[]).includes(s);

const ALL: readonly Scope[] = SCOPES;
/** Member management and HIPAA mode: what a developer may not do. */
const MANAGEMENT: ReadonlySet<Scope> = new Set<Scope>(['members:write', 'compliance:write']);

export const ROLE_SCOPES: Record<Role, ReadonlySet<Scope>> = {
  // Every scope; owners also make and remove owners (shared/users/members.ts checks the role itself).
  owner: new Set(ALL),
  admin: new Set(ALL),
  // Keys, webhooks, numbers, calls, agents, contacts, SMS, caller trust...: everything but managing members and HIPAA mode.
  developer: new Set(ALL.filter((s) => !MANAGEMENT.has(s))),
  // The softphone and their own calls (calls:read is filtered to the calls the user placed: ownCallsOnly), plus who
  // they are (account:read, so GET /v1/session and GET /v1/me answer).
  // phone_numbers:read: the console's Phone page lists the caller IDs an agent may call from (the reference's
  // voice:webrtc alone may do nothing else, so the role carries the read scope instead).
  agent: new Set<Scope>(['voice:webrtc', 'tokens:mint', 'calls:read', 'account:read', 'phone_numbers:read']),
  // Every read.
  viewer: new Set(ALL.filter((s) => s.endsWith(':read'))),
};

/** Roles whose calls:read shows only the calls the user placed. */
export const OWN_CALLS_ONLY: ReadonlySet<Role> = new Set<Role>(['agent']);

/** The scopes a role grants, sorted (for answers). */
export const roleScopes = (r: Role): Scope[] => [...ROLE_SCOPES[r]].sort();
