import { Type, type Static } from '@sinclair/typebox';
import type { Principal } from '../../shared/accounts/principal.ts';
import { createKeyFor, getApiKey, listApiKeys } from '../../shared/accounts/keys.ts';
import { KEY_REVOKED_CHANNEL, revokeAndAnnounce } from '../../shared/accounts/revocation.ts';
import { ApiKeyResponse, apiKeyView } from '../../shared/accounts/views.ts';
import { broadcastAndAwait } from '../../shared/broadcast.ts';
import { DomainError } from '../../shared/errors.ts';
import { sha256 } from '../../shared/ids.ts';
import { announceSessionsGone, csrfToken, revokeSession, sessionCookie, sessionSecretOf, type SessionPrincipal } from '../../shared/sessions/sessions.ts';
import { signIn } from '../../shared/sessions/signin.ts';
import { createSession } from '../../shared/sessions/sessions.ts';
import { acceptInvitation, changeRole, confirmPasswordReset, getUser, inviteMember, listMembers, removeMember, requestPasswordReset,
  normalizeEmail, userKeyIds, type UserRow } from '../../shared/users/members.ts';
import { RESETS_PER_ADDRESS_PER_HOUR, RESETS_PER_EMAIL_PER_HOUR, throttlePasswordResets } from '../../shared/users/reset-throttle.ts';
import { PASSWORD_MAX, PASSWORD_MIN } from '../../shared/users/passwords.ts';
import { MemberResponse, memberView, RoleSchema, SessionResponse, sessionView } from '../../shared/users/views.ts';
import { SCOPES } from '../../shared/scopes.ts';
import { softphoneUrl } from '../../shared/tickets/issue.ts';
import type { Ctx, GatewayDeps, Plugin, Reply } from '../http/types.ts';
import { UuidIdParams } from './schemas.ts';

// The console's API (issue 22): sign-in sessions, password resets, members and invitations, self-serve API keys.
// Thin handlers: the rules live in shared/sessions/*, shared/users/* and shared/accounts/keys.ts.

const TAG = 'Console';
const USER = { id: '5b1f0c2e-8a3d-4e6f-9b7a-2c4d6e8f0a1b', email: 'dana@acmedental.example', name: 'Dana Ruiz' };
const ORG = { id: '7e2a9c41-3b5d-4f60-8a1e-9d2c4b6f8e01', name: 'Acme Dental', slug: 'acme-dental' };
const SESSION_EXAMPLE = { user: USER, organization: ORG, role: 'owner', scopes: ['account:read', 'calls:read', 'calls:write'],
  csrf_token: 'q3Jx0cV9mB2k7nL4pW8sT1yZ6uE5aR0dF3gH9jK2lM4', expires_at: '2026-11-27T15:04:05.000Z',
  softphone_url: 'wss://rtc.openline.example/v1/softphone', carrier: 'sandbox' };
const MEMBER_EXAMPLE = { id: '9c3e5a70-1b2d-4f8e-a6c4-3d5e7f9a1b2c', email: 'sam@acmedental.example', name: null, role: 'developer',
  status: 'invited', created_at: '2026-11-20T15:04:05.000Z' };
const KEY_EXAMPLE = { id: '3c7d9e2a-6b4f-4a1e-8d5c-1f9a0b7e6c24', name: 'CRM integration', prefix: 'olk_8Hq2xZ', scopes: ['calls:read', 'calls:write'],
  allowed_from: ['+15125550100'], allowed_to: [], sub_entity_id: null, created_by_user_id: USER.id, created_at: '2026-11-20T15:04:05.000Z',
  last_used_at: null, revoked_at: null };

const Email = Type.String({ minLength: 3, maxLength: 254, description: 'The email the user signs in with.' });
const NewPassword = Type.String({ minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX, description: `At least ${PASSWORD_MIN} characters.` });
const Token = Type.String({ minLength: 1, maxLength: 200, description: 'The token of the emailed link (after #token=).' });
const SessionBody = Type.Object({ data: SessionResponse });

const secure = (deps: GatewayDeps) => deps.config.publicUrl?.startsWith('https://') === true;
const setCookie = (deps: GatewayDeps, secret: string | null) =>
  ({ 'Set-Cookie': sessionCookie(secret, { secure: secure(deps), maxMs: deps.config.console.sessionMaxMs }) });

async function orgOf(deps: GatewayDeps, organizationId: string) {
  return deps.db.one('SELECT id, name, slug FROM organizations WHERE id = $1', [organizationId]);
}

/** Revokes the session a request's cookie names (signing in again over it: the old id never lives on). */
async function dropPresented(deps: GatewayDeps, headers: Record<string, string>): Promise<void> {
  const old = sessionSecretOf(headers.cookie);
  if (!old) return;
  const row = await deps.db.oneOrNone('UPDATE sessions SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL RETURNING id', [sha256(old)]);
  if (row) await announceSessionsGone(deps.redis, deps.key, { sessionId: row.id });
}

/** A new session for a user who just proved who they are: 200 with the cookie. */
async function signedIn(ctx: Ctx<unknown, unknown, unknown>, user: UserRow, session?: { id: string; secret: string; csrfToken: string; expiresAt: Date }): Promise<Reply<Static<typeof SessionBody>>> {
  const { deps } = ctx;
  await dropPresented(deps, ctx.headers);
  const s = session ?? await createSession(deps.db, { userId: user.id, organizationId: user.organization_id, maxMs: deps.config.console.sessionMaxMs,
    ip: ctx.clientAddress, userAgent: ctx.headers['user-agent'] ?? null });
  return { status: 200, headers: setCookie(deps, s.secret), body: { data: sessionView(user, await orgOf(deps, user.organization_id), s.csrfToken, s.expiresAt, softphoneUrl(deps.config), deps.config.carrier) } };
}

function sessionOf(p: Principal): SessionPrincipal {
  if (p.kind !== 'session') {
    throw new DomainError('forbidden', 'This operation is for console sessions (sign in with POST /v1/session); an API key has no session.');
  }
  return p as SessionPrincipal;
}

const link = (base: string, path: string, token: string) => `${base}${path}#token=${token}`;

export const consoleRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/session', scope: null, tag: TAG, summary: 'Sign in',
    description: 'Signs a user in with email and password: answers who they are and the csrf_token, and sets the HttpOnly '
      + 'cookie ol_session (SameSite=Lax; Secure when PUBLIC_URL is https). Every sign-in makes a new session (a cookie sent '
      + 'with this request is revoked). An unknown email and a wrong password answer the same 401 after the same work. '
      + 'After 5 failures for one email, or 20 from one address, within 15 minutes every attempt answers 429 with Retry-After.',
    examples: { request: { email: USER.email, password: 'correct horse battery' }, response: { data: SESSION_EXAMPLE } },
    body: Type.Object({ email: Email, password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX, description: 'The password.' }) },
      { additionalProperties: false }),
    response: { status: 200, schema: SessionBody, description: 'Signed in; Set-Cookie carries the session.' },
    errors: ['unauthorized', 'rate_limited'],
    handler: async (ctx) => {
      const { deps, body } = ctx;
      const { user, session } = await signIn(deps.db, deps.config.console, { email: body.email, password: body.password,
        address: ctx.clientAddress, userAgent: ctx.headers['user-agent'] ?? null });
      return signedIn(ctx, user, session);
    },
  });
  routes.add({
    method: 'GET', path: '/v1/session', scope: 'account:read', tag: TAG, summary: 'Read the current session',
    description: 'Who is signed in (user, organization, role and scopes) and the session\'s csrf_token. Needs the session '
      + 'cookie: an API key answers 403. Read-only (it marks the session used, which keeps it from idling out).',
    examples: { response: { data: SESSION_EXAMPLE } },
    response: { status: 200, schema: SessionBody },
    errors: ['forbidden'],
    handler: async ({ deps, principal, headers }) => {
      const p = sessionOf(principal);
      const user = (await getUser(deps.db, p.userId))!;
      const secret = sessionSecretOf(headers.cookie)!;
      return { status: 200, body: { data: sessionView(user, await orgOf(deps, p.organizationId), csrfToken(secret), new Date(p.expiresAtMs), softphoneUrl(deps.config), deps.config.carrier) } };
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/session', scope: 'account:read', tag: TAG, summary: 'Sign out',
    description: 'Ends the session at once on every gateway and clears the cookie. Needs X-CSRF-Token. Answers 204.',
    response: { status: 204, description: 'Signed out' },
    errors: ['forbidden'],
    handler: async ({ deps, principal }) => {
      const p = sessionOf(principal);
      await revokeSession(deps.db, p.keyId);
      await announceSessionsGone(deps.redis, deps.key, { sessionId: p.keyId });
      return { status: 204, headers: setCookie(deps, null) };
    },
  });
  routes.add({
    method: 'POST', path: '/v1/password-reset', scope: null, tag: TAG, summary: 'Ask for a password reset link',
    description: 'Emails a one-time link (valid one hour; built from PUBLIC_URL) to the active user with this email, if there '
      + 'is one. Always answers 202 the same way, so it does not tell who has an account. Without SMTP_URL the email lands in '
      + `the sandbox inbox (GET /v1/sandbox/inbox?email=...). At most ${RESETS_PER_EMAIL_PER_HOUR} requests per email and `
      + `${RESETS_PER_ADDRESS_PER_HOUR} per client address an hour, counted whether or not the email has an account `
      + '(rate_limited with Retry-After past them).',
    examples: { request: { email: USER.email }, response: { data: { status: 'accepted' } } },
    errors: ['rate_limited'],
    body: Type.Object({ email: Email }, { additionalProperties: false }),
    response: { status: 202, schema: Type.Object({ data: Type.Object({ status: Type.Literal('accepted', { description: 'Always accepted.' }) },
      { description: 'The request was taken (whether or not the email has an account).' }) }) },
    handler: async ({ deps, body, baseUrl, clientAddress }) => {
      await throttlePasswordResets(deps.passwordResets, deps.key, normalizeEmail(body.email), clientAddress);
      const r = await requestPasswordReset(deps.db, body.email);
      if (r) {
        // Not awaited: how long the answer takes must not tell whether the email has an account.
        void deps.mailer.send({ organizationId: r.user.organization_id, to: r.user.email, kind: 'password_reset',
          subject: 'Reset your password',
          text: `Someone asked to reset the password of ${r.user.email}. To choose a new one, open this link within an hour:\n\n`
            + `${link(baseUrl, '/console/reset-password', r.token)}\n\nIf it was not you, ignore this email.` })
          .catch((err) => deps.log.warn({ err: (err as Error).message }, 'password reset email not sent'));
      }
      return { status: 202, body: { data: { status: 'accepted' as const } } };
    },
  });
  routes.add({
    method: 'POST', path: '/v1/password-reset/confirm', scope: null, tag: TAG, summary: 'Set a new password with a reset link',
    description: `Sets the new password (at least ${PASSWORD_MIN} characters) of the link's user; the link works once. Every `
      + 'session of the user is signed out at once, on every gateway. Answers 204; sign in with the new password.',
    examples: { request: { token: 'Zk3q9xV2mB7nL4pW8sT1yZ6uE5aR0dF3gH9jK2lM4c', password: 'a much longer passphrase' } },
    body: Type.Object({ token: Token, password: NewPassword }, { additionalProperties: false }),
    response: { status: 204, description: 'Password changed' },
    handler: async ({ deps, body }) => {
      const user = await confirmPasswordReset(deps.db, body.token, body.password);
      await announceSessionsGone(deps.redis, deps.key, { userId: user.id });
      return { status: 204 };
    },
  });
  routes.add({
    method: 'POST', path: '/v1/invitations/accept', scope: null, tag: TAG, summary: 'Accept an invitation',
    description: `Sets the invited user's password (at least ${PASSWORD_MIN} characters) and name and signs them in (as POST `
      + '/v1/session answers). The invitation link works once, for 7 days.',
    examples: { request: { token: 'Zk3q9xV2mB7nL4pW8sT1yZ6uE5aR0dF3gH9jK2lM4c', password: 'a much longer passphrase', name: 'Sam Lee' },
      response: { data: SESSION_EXAMPLE } },
    body: Type.Object({ token: Token, password: NewPassword, name: Type.String({ minLength: 1, maxLength: 100, description: 'Their name.' }) },
      { additionalProperties: false }),
    response: { status: 200, schema: SessionBody, description: 'Signed in; Set-Cookie carries the session.' },
    handler: async (ctx) => signedIn(ctx, await acceptInvitation(ctx.deps.db, ctx.body.token, ctx.body.password, ctx.body.name)),
  });

  // --- Members ---
  const MemberParams = UuidIdParams('member (user)');
  routes.add({
    method: 'GET', path: '/v1/members', scope: 'members:read', tag: TAG, summary: 'List members',
    description: 'The organization\'s users (invited ones too, status invited), oldest first. Read-only.',
    examples: { response: { data: [MEMBER_EXAMPLE] } },
    response: { status: 200, schema: Type.Object({ data: Type.Array(MemberResponse, { description: 'The members.' }) }) },
    handler: async ({ deps, principal }) => ({ status: 200, body: { data: (await listMembers(deps.db, principal.organizationId)).map(memberView) } }),
  });
  routes.add({
    method: 'POST', path: '/v1/members', scope: 'members:write', tag: TAG, summary: 'Invite a member',
    description: 'Adds a user with a role and emails them an invitation link (valid 7 days, built from PUBLIC_URL; the sandbox '
      + 'inbox without SMTP_URL). Only owners invite owners. An email that already belongs to an active user anywhere on the '
      + 'platform answers member_exists.',
    examples: { request: { email: MEMBER_EXAMPLE.email, role: 'developer' }, response: { data: MEMBER_EXAMPLE } },
    body: Type.Object({ email: Email, role: RoleSchema }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: MemberResponse }) },
    errors: ['forbidden', 'member_exists'],
    handler: async ({ deps, principal, body, baseUrl }) => {
      const { user, invitationToken } = await inviteMember(deps.db, principal, body.email, body.role);
      const org = await orgOf(deps, principal.organizationId);
      await deps.mailer.send({ organizationId: principal.organizationId, to: user.email, kind: 'invitation',
        subject: `You are invited to ${org.name}`,
        text: `You are invited to join ${org.name} as ${user.role}. To accept, choose your password here within 7 days:\n\n`
          + `${link(baseUrl, '/console/accept-invitation', invitationToken!)}\n` })
        .catch((err) => deps.log.warn({ err: (err as Error).message }, 'invitation email not sent'));
      return { status: 201, body: { data: memberView(user) } };
    },
  });
  routes.add({
    method: 'PATCH', path: '/v1/members/{id}', scope: 'members:write', tag: TAG, summary: 'Change a member\'s role',
    description: 'Changes the role; it applies at once to the member\'s sessions and keys on every gateway (a key of a user never '
      + 'does more than the role allows). Only owners make or demote owners; the last owner cannot be demoted (last_owner).',
    examples: { request: { role: 'viewer' }, response: { data: { ...MEMBER_EXAMPLE, role: 'viewer' } } },
    params: MemberParams,
    body: Type.Object({ role: RoleSchema }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: MemberResponse }) },
    errors: ['forbidden', 'last_owner', 'not_found'],
    handler: async ({ deps, principal, params, body }) => {
      const user = await changeRole(deps.db, principal, params.id, body.role);
      await announceSessionsGone(deps.redis, deps.key, { userId: user.id });
      for (const keyId of await userKeyIds(deps.db, user.id)) await broadcastAndAwait(deps.redis, deps.key, KEY_REVOKED_CHANNEL, keyId);
      return { status: 200, body: { data: memberView(user) } };
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/members/{id}', scope: 'members:write', tag: TAG, summary: 'Remove a member',
    description: 'Removes the member: they can no longer sign in, their sessions end and their API keys are revoked, at once on '
      + 'every gateway. Their calls keep naming them. Only owners remove owners; the last owner cannot be removed (last_owner). Answers 204.',
    params: MemberParams,
    response: { status: 204, description: 'Removed' },
    errors: ['forbidden', 'last_owner', 'not_found'],
    handler: async ({ deps, principal, params }) => {
      const { user, keyIds } = await removeMember(deps.db, principal, params.id);
      await announceSessionsGone(deps.redis, deps.key, { userId: user.id });
      for (const keyId of keyIds) await broadcastAndAwait(deps.redis, deps.key, KEY_REVOKED_CHANNEL, keyId);
      return { status: 204 };
    },
  });

  // --- API keys ---
  const KeyParams = UuidIdParams('API key');
  const E164List = (d: string) => Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 100, description: d }));
  routes.add({
    method: 'GET', path: '/v1/api-keys', scope: 'api_keys:read', tag: TAG, summary: 'List API keys',
    description: 'Every key of the organization, newest first, revoked ones included (revoked_at): prefix, name, scopes, '
      + 'ceilings, creator, created and last used (to the minute). Never the key itself. Read-only.',
    examples: { response: { data: [KEY_EXAMPLE] } },
    response: { status: 200, schema: Type.Object({ data: Type.Array(ApiKeyResponse, { description: 'The keys.' }) }) },
    handler: async ({ deps, principal }) => ({ status: 200, body: { data: (await listApiKeys(deps.db, principal.organizationId)).map(apiKeyView) } }),
  });
  routes.add({
    method: 'POST', path: '/v1/api-keys', scope: 'api_keys:write', tag: TAG, summary: 'Create an API key',
    description: 'Makes a key for the caller\'s user (created_by_user_id; calls it places name the user). Its scopes must be '
      + 'among the caller\'s own, and where the caller has a caller-ID or destination ceiling, the key\'s must lie within it '
      + '(Authentication rule 8). Only a credential of the whole organization makes keys (a key limited to a sub-entity '
      + 'answers 403 forbidden); sub_entity_id limits the new key to one sub-entity. The answer carries the key itself (`key`) this once: only its hash is kept. An '
      + 'Idempotency-Key is refused here, since the answer is never stored.',
    examples: { request: { name: 'CRM integration', scopes: ['calls:read', 'calls:write'], allowed_from: ['+15125550100'] },
      response: { data: { ...KEY_EXAMPLE, key: 'olk_8Hq2xZ7mB2k7nL4pW8sT1yZ6uE5aR0dF3gH9jK2l' } } },
    body: Type.Object({
      name: Type.String({ minLength: 1, maxLength: 100, description: 'What the key is for.' }),
      scopes: Type.Array(Type.String({ enum: [...SCOPES] }), { minItems: 1, maxItems: SCOPES.length, description: 'What the key may do (among your own scopes).' }),
      allowed_from: E164List('Caller-ID ceiling (E.164); empty or absent: any number of the organization.'),
      allowed_to: E164List('Destination ceiling (E.164); empty or absent: any destination.'),
      sub_entity_id: Type.Optional(Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: 'Limit the key to one '
        + 'sub-entity of your organization (validation_error otherwise): it then sees and touches only that sub-entity\'s numbers, '
        + 'calls, contacts and SMS, and cannot make keys or change HIPAA mode. Absent or null: the whole organization.' })),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: Type.Composite([ApiKeyResponse, Type.Object({
      key: Type.String({ description: 'The key itself, shown this once: store it now.' }) })], { description: 'The new key, with its secret.' }) }) },
    idempotency: false,
    errors: ['forbidden'],
    handler: async ({ deps, principal, body }) => {
      const { apiKey, row } = await createKeyFor(deps.db, principal, body);
      return { status: 201, body: { data: { ...apiKeyView(row), key: apiKey } } };
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/api-keys/{id}', scope: 'api_keys:write', tag: TAG, summary: 'Revoke an API key',
    description: 'Revokes the key: every gateway refuses it before this answers. Revoking a revoked key answers it unchanged.',
    examples: { response: { data: { ...KEY_EXAMPLE, revoked_at: '2026-11-21T08:00:00.000Z' } } },
    params: KeyParams,
    response: { status: 200, schema: Type.Object({ data: ApiKeyResponse }) },
    errors: ['not_found'],
    handler: async ({ deps, principal, params }) => {
      const k = await getApiKey(deps.db, principal.organizationId, params.id);
      if (!k.revoked_at) await revokeAndAnnounce(deps.db, deps.redis, deps.key, k.id);
      return { status: 200, body: { data: apiKeyView(await getApiKey(deps.db, principal.organizationId, params.id)) } };
    },
  });
};
