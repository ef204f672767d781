// Every scope of the reference. A key carries an explicit list; `all` in the admin CLI expands to this list
// except compliance:write, which the reference says is never granted by default.
export const SCOPES = [
  'account:read',
  'agents:read', 'agents:write',
  'api_keys:read', 'api_keys:write',
  'bookings:read',
  'brand:read', 'brand:write',
  'caller_trust:read', 'caller_trust:write',
  'calls:read', 'calls:write',
  'contacts:read', 'contacts:write',
  'jobs:read', 'jobs:write',
  'members:read', 'members:write',
  'notifications:write',
  'phone_numbers:read', 'phone_numbers:write',
  'optimize:read', 'optimize:write',
  'sms:read', 'sms:write',
  'sub_entities:read', 'sub_entities:write',
  'tokens:mint',
  'transcripts:read',
  'usage:read',
  'voice:read', 'voice:write',
  'voice:webrtc',
  'webhooks:read', 'webhooks:write',
  'recordings:read',
  'compliance:write',
] as const;

export type Scope = (typeof SCOPES)[number];
export const DEFAULT_ALL_SCOPES: Scope[] = SCOPES.filter((s) => s !== 'compliance:write');

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

/** Parses `all` or a comma list; throws with the unknown names. */
export function parseScopes(input: string): Scope[] {
  if (input.trim() === 'all') return [...DEFAULT_ALL_SCOPES];
  const list = input.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = list.filter((s) => !isScope(s));
  if (bad.length) throw new Error(`unknown scope(s): ${bad.join(', ')}`);
  if (!list.length) throw new Error('at least one scope is required');
  return [...new Set(list)] as Scope[];
}
