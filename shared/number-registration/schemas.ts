// The answers of /v1/number-registration: a number's registration (the view beside its schema) and the per-number
// results of a bulk submission.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import { REJECTION_CODES } from './provider.ts';

export const REGISTRATION_STATUSES = ['not_registered', 'pending', 'registered', 'rejected'] as const;
export type NumberRegistrationStatus = (typeof REGISTRATION_STATUSES)[number];

const Ts = (description: string) => Type.String({ format: 'date-time', description });

export const RegistrationStatus = Type.Union(REGISTRATION_STATUSES.map((s) => Type.Literal(s)), {
  description: 'not_registered: never submitted, or withdrawn when the number was released. pending: submitted, the provider '
    + 'has not decided. registered: the analytics providers have the number and its business. rejected: see rejection_reason; '
    + 'submit again once fixed.' });

export const RejectionReason = Type.Object({
  code: Type.Union(REJECTION_CODES.map((c) => Type.Literal(c)), { description: 'business_unverified: the business name and EIN '
    + 'do not match a registered business. number_ownership_unverified: the registry could not confirm the business holds the number.' }),
  message: Type.String({ description: 'The provider\'s words.' }),
}, { description: 'Why the provider rejected the number.' });

export const RegistrationDetailsResponse = Type.Object({
  business_name: Type.String({ description: 'The legal name of the business calling from the number.' }),
  ein: Type.String({ description: 'Its EIN (NN-NNNNNNN).' }),
  call_purpose: Type.String({ description: 'Why it calls (see the request\'s call_purpose).' }),
  address: Nullable(Type.String(), 'The business address on one line; null when none was given.'),
  source: Type.Union([Type.Literal('enterprise_registration'), Type.Literal('request')], {
    description: 'enterprise_registration: taken from the organization\'s APPROVED enterprise registration; request: given in the submission.' }),
  enterprise_registration_id: Nullable(Type.String(), 'The enterprise registration the details came from.'),
}, { description: 'What was submitted with the number.' });

export const NumberRegistrationResponse = Type.Object({
  phone_id: Type.Integer({ description: 'The phone number\'s id (GET /v1/phone-numbers/{id}).' }),
  phone_number: Type.String({ description: 'The number (E.164).' }),
  status: RegistrationStatus,
  provider: Nullable(Type.String(), 'The registration provider (sandbox); null when never submitted.'),
  rejection_reason: Nullable(RejectionReason, 'Why it was rejected (status rejected only).'),
  details: Nullable(RegistrationDetailsResponse, 'What was last submitted; null when never submitted.'),
  submitted_at: Nullable(Ts('When it was last submitted.'), 'When it was last submitted; null when never.'),
  decided_at: Nullable(Ts('When the provider decided.'), 'When the provider registered or rejected it; null while pending or never submitted.'),
  withdrawn_at: Nullable(Ts('When it was withdrawn.'), 'When the registration was withdrawn because the number was released.'),
}, { description: 'A number\'s registration with the call-analytics providers.' });
export type NumberRegistrationView = Static<typeof NumberRegistrationResponse>;

export const SUBMIT_RESULTS = ['submitted', 'already_pending', 'already_registered'] as const;
export type SubmitResult = (typeof SUBMIT_RESULTS)[number];

export const SubmitResultResponse = Type.Object({
  phone_id: Type.Integer({ description: 'The phone number\'s id.' }),
  phone_number: Type.String({ description: 'The number (E.164).' }),
  result: Type.Union(SUBMIT_RESULTS.map((r) => Type.Literal(r)), { description: 'submitted: now pending (a rejected or '
    + 'withdrawn number is submitted again). already_pending, already_registered: left as it was, not resubmitted.' }),
  registration: NumberRegistrationResponse,
}, { description: 'What the submission did with one number.' });

export const SubmitMeta = Type.Object({
  submitted: Type.Integer({ description: 'Numbers submitted now.' }),
  already_pending: Type.Integer({ description: 'Numbers left pending.' }),
  already_registered: Type.Integer({ description: 'Numbers left registered.' }),
}, { description: 'How many numbers got each result.' });

export interface RegistrationRow {
  phone_id: number;
  phone_number: string;
  organization_id: string;
  /** null: no registration row (never submitted). */
  status: NumberRegistrationStatus | null;
  provider: string | null;
  details: Static<typeof RegistrationDetailsResponse> | null;
  rejection_code: (typeof REJECTION_CODES)[number] | null;
  rejection_message: string | null;
  version: number | null;
  submitted_at: Date | null;
  decided_at: Date | null;
  withdrawn_at: Date | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function registrationView(r: RegistrationRow): NumberRegistrationView {
  return {
    phone_id: Number(r.phone_id),
    phone_number: r.phone_number,
    status: r.status ?? 'not_registered',
    provider: r.provider,
    rejection_reason: r.rejection_code ? { code: r.rejection_code, message: r.rejection_message ?? '' } : null,
    details: r.details,
    submitted_at: iso(r.submitted_at),
    decided_at: iso(r.decided_at),
    withdrawn_at: iso(r.withdrawn_at),
  };
}

export const REGISTRATION_EXAMPLE: NumberRegistrationView = {
  phone_id: 1042, phone_number: '+14155550123', status: 'registered', provider: 'sandbox', rejection_reason: null,
  details: { business_name: 'Acme Dental LLC', ein: '12-3456789', call_purpose: 'appointment_reminders',
    address: '100 Main St, San Francisco, CA 94105, US', source: 'enterprise_registration', enterprise_registration_id: '01938f2e-5c1a-7d3b-9e4f-6a2b8c0d1e3f' },
  submitted_at: '2026-11-20T15:04:05.000Z', decided_at: '2026-11-20T15:04:08.000Z', withdrawn_at: null,
};
