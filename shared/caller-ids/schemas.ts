// Response schema of a caller ID, beside its view (caller-ids.ts: callerIdView).
import { Type } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';

export const CallerIdResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The caller ID\'s id.' }),
  phone_number: Type.String({ description: 'The external number, E.164.' }),
  name: Type.String({ description: 'A label for the caller ID (may be empty).' }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('verified')],
    { description: 'pending: not usable as from_number yet (call_id_not_verified); verified: usable as from_number.' }),
  verification: Nullable(Type.Object({
    state: Type.Union([Type.Literal('not_started'), Type.Literal('code_sent'), Type.Literal('expired'), Type.Literal('locked')],
      { description: 'not_started: no verification call yet; code_sent: a code is live; expired: the live code expired; '
        + 'locked: the code was burned by too many wrong attempts. A new verification call starts over from code_sent.' }),
    expires_at: Nullable(Type.String({ format: 'date-time' }), 'When the live code expires; null when no code is live.'),
    attempts_remaining: Nullable(Type.Integer(), 'Wrong codes still accepted before the code locks; null when no code is live.'),
  }, { description: 'Where the verification stands.' }), 'Where the verification stands; null once verified.'),
  verified_at: Nullable(Type.String({ format: 'date-time' }), 'When the code was confirmed; null while pending.'),
  created_at: Type.String({ format: 'date-time', description: 'When the caller ID was added.' }),
  updated_at: Type.String({ format: 'date-time', description: 'When the caller ID last changed.' }),
}, { description: 'An external number usable as caller ID once verified.' });
