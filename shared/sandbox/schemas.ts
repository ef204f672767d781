// Response schemas of the sandbox's test inbox, beside its view (inbox.ts: inboxEntryView).
import { Type } from '@sinclair/typebox';

export const InboxEntryResponse = Type.Object({
  id: Type.Integer({ description: 'Increasing id of the entry.' }),
  phone_number: Type.String({ description: 'The external number it was delivered to (E.164).' }),
  channel: Type.Literal('voice', { description: 'voice: something a call said.' }),
  kind: Type.String({ description: 'What produced it: caller_id_verification_call.' }),
  text: Type.String({ description: 'What was said (a verification call speaks the code\'s digits, twice).' }),
  created_at: Type.String({ format: 'date-time', description: 'When it was delivered.' }),
}, { description: 'One thing the sandbox carrier delivered to an external number.' });
