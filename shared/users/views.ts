// Members and sessions as the API shows them: response schemas and views (GET /v1/members, GET /v1/session, ...).
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import type { UserRow } from './members.ts';
import { ROLES, roleScopes } from './roles.ts';

export const RoleSchema = Type.Union(ROLES.map((r) => Type.Literal(r)), { description: 'owner and admin: everything (only '
  + 'owners make or remove owners); developer: everything but members and HIPAA mode; agent: the softphone and their own '
  + 'calls; viewer: every read.' });

export const MemberResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The user id (issued_by_user_id on the calls they place).' }),
  email: Type.String({ description: 'What they sign in with (one active user per email across the platform).' }),
  name: Nullable(Type.String(), 'Their name; null until they accepted the invitation.'),
  role: RoleSchema,
  status: Type.Union([Type.Literal('active'), Type.Literal('invited')], { description: 'invited: has not set a password yet.' }),
  created_at: Type.String({ format: 'date-time', description: 'When they were added.' }),
}, { description: 'A member (user) of the organization.' });

export const memberView = (u: UserRow): Static<typeof MemberResponse> => ({
  id: u.id, email: u.email, name: u.name, role: u.role, status: u.password_hash ? 'active' : 'invited',
  created_at: u.created_at.toISOString(),
});

export const SessionResponse = Type.Object({
  user: Type.Object({
    id: Type.String({ format: 'uuid', description: 'The signed-in user.' }),
    email: Type.String({ description: 'Their email.' }),
    name: Nullable(Type.String(), 'Their name.'),
  }, { description: 'Who is signed in.' }),
  organization: Type.Object({
    id: Type.String({ format: 'uuid', description: 'The organization id.' }),
    name: Type.String({ description: 'Its name.' }),
    slug: Type.String({ description: 'Its slug.' }),
  }, { description: 'The user\'s organization.' }),
  role: RoleSchema,
  scopes: Type.Array(Type.String(), { description: 'What the session may do (the role\'s scopes).' }),
  csrf_token: Type.String({ description: 'Send it as X-CSRF-Token on every POST, PUT, PATCH and DELETE made with the session.' }),
  expires_at: Type.String({ format: 'date-time', description: 'When the session ends at the latest (it also ends after 12 hours unused).' }),
  softphone_url: Type.String({ description: 'The softphone WebSocket a browser call\'s ticket (POST /v1/webrtc-token) is sent on: '
    + 'SIGNALING_PUBLIC_URL, else ws://HOST:SIGNALING_PORT/v1/softphone.' }),
  carrier: Type.Union([Type.Literal('sandbox'), Type.Literal('livekit'), Type.Literal('sip')], { description: 'The platform\'s carrier '
    + '(CARRIER): sandbox (the default; the console\'s Phone page then offers "Simulate incoming call", POST /v1/sandbox/calls/inbound '
    + 'with ring: true), sip (the SIP trunk) or livekit.', examples: ['sandbox'] }),
}, { description: 'A console session.' });

export function sessionView(u: UserRow, org: { id: string; name: string; slug: string }, csrf: string, expiresAt: Date,
  softphoneUrl: string, carrier: 'sandbox' | 'livekit' | 'sip'): Static<typeof SessionResponse> {
  return {
    user: { id: u.id, email: u.email, name: u.name },
    organization: { id: org.id, name: org.name, slug: org.slug },
    role: u.role, scopes: roleScopes(u.role), csrf_token: csrf, expires_at: expiresAt.toISOString(), softphone_url: softphoneUrl, carrier,
  };
}
