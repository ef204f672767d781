// Response schemas of the sandbox's test inbox, beside its view (inbox.ts: inboxEntryView).
import { Type } from '@sinclair/typebox';

export const InboxEntryResponse = Type.Object({
  id: Type.Integer({ description: 'Increasing id of the entry.' }),
  phone_number: Type.Optional(Type.String({ description: 'voice: the external number it was delivered to (E.164).' })),
  email: Type.Optional(Type.String({ description: 'email: the address it was mailed to.' })),
  channel: Type.Union([Type.Literal('voice'), Type.Literal('email')], { description: 'voice: something a call said; email: a '
    + 'message the platform mailed (while SMTP_URL is unset).' }),
  kind: Type.String({ description: 'What produced it: caller_id_verification_call, invitation, password_reset.' }),
  subject: Type.Optional(Type.String({ description: 'email: the subject line.' })),
  text: Type.String({ description: 'What was said (a verification call speaks the code\'s digits, twice), or the email\'s text.' }),
  created_at: Type.String({ format: 'date-time', description: 'When it was delivered.' }),
}, { description: 'One thing the sandbox delivered: speech to an external number, or an email.' });
