import { Type } from '@sinclair/typebox';
import { CALL_POLICY_ERRORS } from '../../shared/compliance/guard.ts';
import { CLIENT_TOKEN_DEFAULT_TTL, CLIENT_TOKEN_MAX_TTL, CLIENT_TOKEN_MIN_TTL } from '../../shared/tokens/client-token.ts';
import { mintClientToken } from '../../shared/tokens/mint.ts';
import { ClientTokenResponse } from '../../shared/tokens/schemas.ts';
import { issueRoomToken, issueWebrtcTicket } from '../../shared/tickets/issue.ts';
import { RoomTokenResponse, WebrtcTicketResponse } from '../../shared/tickets/schemas.ts';
import type { Plugin } from '../http/types.ts';

const E164 = (description: string) => Type.String({ maxLength: 32, description });

const BrowserCall = Type.Object({
  from_number: Type.Optional(E164('Caller ID: an active E.164 number of your organization (inside the credential\'s bounds).')),
  to_number: Type.Optional(E164('The called party (E.164), inside the credential\'s bounds; missing: destination_missing.')),
}, { additionalProperties: false });

const CALL_ERRORS = ['destination_missing', 'destination_invalid', 'no_active_number', 'call_id_not_verified', 'caller_id_held_elsewhere',
  'destination_blocked', 'forbidden', 'spend_cap_reached', 'channel_limit_exceeded', 'idempotency_conflict', ...CALL_POLICY_ERRORS] as const;

// Bounded client tokens and the browser calling paths (A: a single-use ticket for the softphone WebSocket; B: a
// room token for a call the service places). The rules live in shared/tokens and shared/tickets.
export const clientTokenRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/client-tokens', scope: 'tokens:mint', tag: 'Browser calling',
    summary: 'Mint a bounded client token',
    description: 'Signs a short-lived credential to hand to a browser or app instead of the API key: it may use only the '
      + 'from_numbers as caller IDs, only the to_numbers as destinations (any destination when empty), only the scopes '
      + 'given (default voice:webrtc) and only until ttl_seconds pass. Every bound must lie inside the minting key\'s own '
      + 'ceiling and each from_number must be an active number of the organization (forbidden otherwise). Nothing is '
      + 'stored: the token cannot be revoked, it expires. A client token cannot mint tokens (tokens:mint is never granted).',
    examples: {
      request: { from_numbers: ['+14155550123'], to_numbers: ['+12125550187'], ttl_seconds: 900, scopes: ['voice:webrtc'] },
      response: { data: { token: 'olct_eyJvIjoiNWYwYzhhMmUiLCJmIjpbIisxNDE1NTU1MDEyMyJdfQ.kQ3v8ZpN2xR7tYc1', expires_in: 900,
        from_numbers: ['+14155550123'], to_numbers: ['+12125550187'], scopes: ['voice:webrtc'] } },
    },
    body: Type.Object({
      from_numbers: Type.Array(E164('An active number of your organization inside this key\'s ceiling.'), { minItems: 1, maxItems: 20,
        description: 'The caller IDs the token may use (1 to 20): active numbers of your organization within this key\'s ceiling.' }),
      to_numbers: Type.Optional(Type.Array(E164('A destination inside this key\'s ceiling.'), { maxItems: 50,
        description: 'Empty or absent: any destination within the key\'s ceiling (the destination rules still apply).' })),
      ttl_seconds: Type.Optional(Type.Integer({ minimum: CLIENT_TOKEN_MIN_TTL, maximum: CLIENT_TOKEN_MAX_TTL, default: CLIENT_TOKEN_DEFAULT_TTL,
        description: `How long the token is valid, ${CLIENT_TOKEN_MIN_TTL} to ${CLIENT_TOKEN_MAX_TTL} seconds.` })),
      scopes: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: 40,
        description: 'A subset of this key\'s scopes (never tokens:mint); default ["voice:webrtc"].' })),
    }, { additionalProperties: false }),
    response: {
      status: 201, description: 'The token (shown once; nothing is stored).',
      schema: Type.Object({ data: ClientTokenResponse }),
    },
    errors: ['forbidden', 'call_id_not_verified', 'caller_id_held_elsewhere', 'idempotency_conflict'],
    handler: async ({ deps, principal, body }) => {
      const signer = await deps.tokenKeys.clientTokenSigner();
      return { status: 201, body: { data: await mintClientToken(deps.db, signer, principal, body) } };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/webrtc-token', subEntities: 'organization', scope: 'voice:webrtc', tag: 'Browser calling',
    summary: 'Path A: get a browser call ticket',
    description: 'Admits a browser call (type webrtc) with the same checks as POST /v1/calls (destination, bounds, '
      + 'caller ID, call rate, spend cap, channels) and answers a single-use ticket. The call is QUEUED and holds one '
      + 'channel; the browser sends the ticket in the first message on the softphone WebSocket (the /softphone page does), '
      + 'and only then is to_number dialed. A ticket not redeemed within five minutes is revoked and its call canceled '
      + '(connection_unconfirmed). Cancel it earlier with POST /v1/calls/{id}/hangup?mode=cancel_setup.',
    examples: {
      request: { from_number: '+14155550123', to_number: '+12125550187' },
      response: { data: { token: 'olwt_3kQ9vX2mZr7TnB5cLp0aYsE1dHk4WqN8tRj6uFx2GyA', call_id: '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98' } },
    },
    body: BrowserCall,
    response: {
      status: 201,
      schema: Type.Object({ data: WebrtcTicketResponse }),
    },
    errors: [...CALL_ERRORS],
    handler: async ({ deps, principal, body }) =>
      ({ status: 201, body: { data: await issueWebrtcTicket(deps.calls, principal, body) } }),
  });

  routes.add({
    method: 'POST', path: '/v1/room-token', subEntities: 'organization', scope: 'voice:webrtc', tag: 'Browser calling',
    summary: 'Path B (beta): get a room token',
    description: 'Admits a call (type room) with the same checks as POST /v1/calls and places it into a room of its own; '
      + 'the browser joins the room at room_url with the answered LiveKit access token, which grants joining that room '
      + 'only. With the sandbox carrier room_url is this platform\'s softphone WebSocket. Beta.',
    examples: {
      request: { from_number: '+14155550123', to_number: '+12125550187' },
      response: { data: { token: 'eyJhbGciOiJIUzI1NiJ9.eyJ2aWRlbyI6eyJyb29tIjoiY2FsbC0wMTkzYTRkMCJ9fQ.Zk2v9QxW2mZr7TnB5cLp0aYs',
        room_url: 'wss://rtc.openline.example/v1/softphone', call_id: '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98' } },
    },
    body: BrowserCall,
    response: {
      status: 201,
      schema: Type.Object({ data: RoomTokenResponse }),
    },
    errors: [...CALL_ERRORS],
    handler: async ({ deps, principal, body }) =>
      ({ status: 201, body: { data: await issueRoomToken(deps.calls, principal, body) } }),
  });
};
