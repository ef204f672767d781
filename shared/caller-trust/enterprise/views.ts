// Enterprise registrations as the API shows them: the response schema and its view. The business details' schemas
// (detailFields) describe the request bodies too: the route file validates with them.
import { Type, type Static } from '@sinclair/typebox';
import { AttachedDocument } from '../../documents/schemas.ts';
import { Nullable } from '../../response-schemas.ts';
import { BUSINESS_TYPES } from './details.ts';
import { VALID_EIN_PREFIXES } from './ein.ts';
import { STATUSES, type RegistrationRow } from './registrations.ts';

const E164 = (description: string) => Type.String({ minLength: 2, maxLength: 16, description });
const Address = Type.Object({
  line1: Type.String({ minLength: 1, maxLength: 200, description: 'Street address.' }),
  line2: Type.Optional(Nullable(Type.String({ maxLength: 200 }), 'Suite, floor or unit (optional).')),
  city: Type.String({ minLength: 1, maxLength: 100, description: 'City.' }),
  state: Type.String({ minLength: 2, maxLength: 2, description: 'US state or territory code (two capital letters), e.g. TX.' }),
  postal_code: Type.String({ minLength: 5, maxLength: 10, description: 'ZIP code: NNNNN or NNNNN-NNNN.' }),
  country: Type.Literal('US', { description: 'Country: US (an EIN is a US identifier).' }),
}, { additionalProperties: false, description: 'The registered (legal) address of the business.' });
const Contact = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 120, description: 'Full name of the person authorized to act for the business.' }),
  title: Type.String({ minLength: 1, maxLength: 120, description: 'Their job title, e.g. Chief Executive Officer.' }),
  email: Type.String({ format: 'email', maxLength: 254, description: 'Their e-mail address.' }),
  phone: E164('Their phone number (E.164).'),
}, { additionalProperties: false, description: 'The authorized contact: the person vetting may call to confirm the registration.' });

export const detailFields = {
  legal_name: Type.String({ minLength: 1, maxLength: 200, description: 'Legal business name exactly as registered with the IRS.' }),
  ein: Type.String({ pattern: '^\\d{2}-\\d{7}$', description: `Employer Identification Number, NN-NNNNNNN; the first two digits must be a valid IRS campus prefix (${VALID_EIN_PREFIXES.length} of the 100 two-digit values; 00, 07-09, 17-19, 28, 29, 49, 69, 70, 78, 79, 89, 96 and 97 were never assigned). Sandbox: an EIN ending in 9 is rejected by vetting.` }),
  business_type: Type.Unsafe<(typeof BUSINESS_TYPES)[number]>({ type: 'string', enum: [...BUSINESS_TYPES], description: 'Legal form of the business.' }),
  industry: Type.String({ minLength: 1, maxLength: 100, description: 'Industry or line of business, e.g. Dental care.' }),
  website: Type.String({ minLength: 4, maxLength: 300, description: 'The business\'s website (http or https URL).' }),
  registered_address: Address,
  authorized_contact: Contact,
  phone_numbers: Type.Array(E164('A number (E.164).'), { minItems: 1, maxItems: 500, description: 'The organization\'s numbers the LOA covers (E.164, each held by the organization, not released; at most 500).' }),
};

const LoaFile = (what: string) => Nullable(Type.Object({
  url: Type.String({ description: `Where to download the ${what} LOA (GET, application/pdf, caller_trust:read).` }),
  sha256: Type.String({ description: 'SHA-256 of the PDF (hex).' }),
  size_bytes: Type.Integer({ description: 'Size of the PDF in bytes.' }),
  created_at: Type.String({ format: 'date-time', description: 'When it was generated, signed or uploaded.' }),
}), `The ${what} LOA, or null when there is none.`);

export const RegistrationResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The registration id.' }),
  status: Type.Unsafe<(typeof STATUSES)[number]>({ type: 'string', enum: [...STATUSES], description: 'DRAFT, PENDING_VETTING, APPROVED or REJECTED.' }),
  ...detailFields,
  rejection_reasons: Type.Array(Type.String(), { description: 'Why vetting rejected it (code: explanation); empty otherwise.' }),
  loa: Type.Object({
    unsigned: LoaFile('unsigned'),
    signed: LoaFile('signed'),
    signature_method: Nullable(Type.Unsafe<'in_app' | 'uploaded'>({ type: 'string', enum: ['in_app', 'uploaded'] }),
      'How the LOA of the current vetting round was signed: in_app (sign-and-submit, resign) or uploaded (submit); null before.'),
  }, { description: 'The Letter of Authorization documents.' }),
  documents: Type.Array(AttachedDocument, { description: 'Supporting documents attached to it (POST /v1/documents with '
    + 'registration_id), oldest first; those of a PENDING_VETTING or APPROVED registration cannot be deleted.' }),
  submitted_at: Nullable(Type.String({ format: 'date-time' }), 'When it last went into vetting; null before.'),
  decided_at: Nullable(Type.String({ format: 'date-time' }), 'When vetting last decided; null while undecided.'),
  created_at: Type.String({ format: 'date-time', description: 'When the draft was created.' }),
  updated_at: Type.String({ format: 'date-time', description: 'When it last changed.' }),
}, { description: 'An enterprise registration: the legal business details, the LOA and the vetting status.' });

/** The API shape of a registration: its LOA files as download links under baseUrl. */
export function registrationView(r: RegistrationRow, baseUrl: string): Static<typeof RegistrationResponse> {
  const file = (v: 'unsigned' | 'signed') => {
    const f = r.loas?.[v];
    return f ? { url: `${baseUrl}/v1/caller-trust/enterprise/${r.id}/loa?version=${v}`, sha256: f.sha256, size_bytes: f.size,
      created_at: new Date(f.created_at).toISOString() } : null;
  };
  return {
    id: r.id, status: r.status, legal_name: r.legal_name, ein: r.ein, business_type: r.business_type, industry: r.industry,
    website: r.website, registered_address: r.registered_address, authorized_contact: r.authorized_contact,
    phone_numbers: r.phone_numbers, rejection_reasons: r.rejection_reasons,
    loa: { unsigned: file('unsigned'), signed: file('signed'), signature_method: r.signature_method },
    documents: (r.documents ?? []).map((d) => ({ id: d.id, name: d.name, content_type: d.content_type, size_bytes: Number(d.size_bytes) })),
    submitted_at: r.submitted_at?.toISOString() ?? null, decided_at: r.decided_at?.toISOString() ?? null,
    created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString(),
  };
}
