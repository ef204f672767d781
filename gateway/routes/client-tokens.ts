import { Type } from '@sinclair/typebox';
import { CLIENT_TOKEN_DEFAULT_TTL, CLIENT_TOKEN_MAX_TTL, CLIENT_TOKEN_MIN_TTL, clientTokenSigner } from '../../shared/tokens/client-token.ts';
import { mintClientToken } from '../../shared/tokens/mint.ts';
import { issueRoomToken, issueWebrtcTicket } from '../../shared/tickets/issue.ts';
import { callRuntime } from '../../shared/calls/runtime.ts';
import type { Plugin } from '../http/types.ts';

const E164 = (description: string) => Type.String({ maxLength: 32, description });

const BrowserCall = Type.Object({
  from_number: Type.Optional(E164('Caller ID: an active E.164 number of your organization (inside the credential\'s bounds).')),
  to_number: Type.Optional(E164('The called party (E.164), inside the credential\'s bounds; missing: destination_missing.')),
}, { additionalProperties: false });

const CALL_ERRORS = ['destination_missing', 'destination_invalid', 'no_active_number', 'call_id_not_verified',
  'destination_blocked', 'forbidden', 'spend_cap_reached', 'channel_limit_exceeded', 'idempotency_conflict'] as const;

// Bounded client tokens and the browser calling paths (A: a single-use ticket for the softphone WebSocket; B: a
// room token for a call the service places). The rules live in shared/tokens and shared/tickets.
export const clientTokenRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/client-tokens', scope: 'tokens:mint', tag: 'Browser calling',
    summary: 'Mint a bounded client token: usable in place of this API key, only with the chosen numbers and scopes, until it expires. A client token cannot mint tokens.',
    body: Type.Object({
      from_numbers: Type.Array(E164('An active number of your organization inside this key\'s ceiling.'), { minItems: 1, maxItems: 20 }),
      to_numbers: Type.Optional(Type.Array(E164('A destination inside this key\'s ceiling.'), { maxItems: 50,
        description: 'Empty or absent: any destination within the key\'s ceiling (the destination rules still apply).' })),
      ttl_seconds: Type.Optional(Type.Integer({ minimum: CLIENT_TOKEN_MIN_TTL, maximum: CLIENT_TOKEN_MAX_TTL, default: CLIENT_TOKEN_DEFAULT_TTL })),
      scopes: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: 40,
        description: 'A subset of this key\'s scopes (never tokens:mint); default ["voice:webrtc"].' })),
    }, { additionalProperties: false }),
    response: {
      status: 201, description: 'The token (shown once; nothing is stored).',
      schema: Type.Object({ data: Type.Object({
        token: Type.String({ description: 'olct_… ; send as "Authorization: Bearer <token>".' }),
        expires_in: Type.Integer(), from_numbers: Type.Array(Type.String()), to_numbers: Type.Array(Type.String()),
        scopes: Type.Array(Type.String()),
      }) }),
    },
    errors: ['forbidden', 'idempotency_conflict'],
    handler: async ({ deps, principal, body }) => {
      const signer = await clientTokenSigner(deps.db, deps.config);
      return { status: 201, body: { data: await mintClientToken(deps.db, signer, principal, body) } };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/webrtc-token', scope: 'voice:webrtc', tag: 'Browser calling',
    summary: 'Path A: a single-use ticket for one browser call. The call is recorded QUEUED and holds one channel; the carrier leg is dialed when the browser redeems the ticket on the softphone WebSocket. An unused ticket is revoked after five minutes.',
    body: BrowserCall,
    response: {
      status: 201,
      schema: Type.Object({ data: Type.Object({
        token: Type.String({ description: 'olwt_… ; single use, send it in the first WebSocket message.' }),
        call_id: Type.String({ format: 'uuid' }),
      }) }),
    },
    errors: [...CALL_ERRORS],
    handler: async ({ deps, principal, body }) =>
      ({ status: 201, body: { data: await issueWebrtcTicket(callRuntime(deps), principal, body) } }),
  });

  routes.add({
    method: 'POST', path: '/v1/room-token', scope: 'voice:webrtc', tag: 'Browser calling',
    summary: 'Path B (beta): the service places the call into a room; the browser joins it with this LiveKit access token at room_url.',
    body: BrowserCall,
    response: {
      status: 201,
      schema: Type.Object({ data: Type.Object({
        token: Type.String({ description: 'A LiveKit access token (JWT) granting join to this call\'s room only.' }),
        room_url: Type.String({ description: 'Where to join: the LiveKit URL, or this platform\'s softphone WebSocket with the sandbox carrier.' }),
        call_id: Type.String({ format: 'uuid' }),
      }) }),
    },
    errors: [...CALL_ERRORS],
    handler: async ({ deps, principal, body }) =>
      ({ status: 201, body: { data: await issueRoomToken(callRuntime(deps), principal, body) } }),
  });
};
