// Response schema of a minted client token, beside what builds it (mint.ts: mintClientToken).
import { Type } from '@sinclair/typebox';

export const ClientTokenResponse = Type.Object({
  token: Type.String({ description: 'olct_… ; send as "Authorization: Bearer <token>".' }),
  expires_in: Type.Integer({ description: 'Seconds until the token expires.' }),
  from_numbers: Type.Array(Type.String(), { description: 'The caller IDs the token may use.' }),
  to_numbers: Type.Array(Type.String(), { description: 'The destinations the token may call; empty: any within the key\'s ceiling.' }),
  scopes: Type.Array(Type.String(), { description: 'The token\'s scopes.' }),
}, { description: 'The minted token.' });
