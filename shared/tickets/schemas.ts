// Response schemas of the browser calling paths, beside what builds them (issue.ts: issueWebrtcTicket, issueRoomToken).
import { Type } from '@sinclair/typebox';

export const WebrtcTicketResponse = Type.Object({
  token: Type.String({ description: 'olwt_… ; single use, send it in the first WebSocket message.' }),
  call_id: Type.String({ format: 'uuid', description: 'The browser call\'s id (GET /v1/calls/{id}).' }),
}, { description: 'The ticket and its call (the reference\'s two fields; the console reads the softphone URL from its session).' });

export const RoomTokenResponse = Type.Object({
  token: Type.String({ description: 'A LiveKit access token (JWT) granting join to this call\'s room only.' }),
  room_url: Type.String({ description: 'Where to join: the LiveKit URL, or this platform\'s softphone WebSocket with the sandbox carrier.' }),
  call_id: Type.String({ format: 'uuid', description: 'The call\'s id (GET /v1/calls/{id}).' }),
}, { description: 'The room token and its call.' });
