import { Type } from '@sinclair/typebox';
import type { BusinessDetails } from '../../shared/caller-trust/enterprise/details.ts';
import { pdfPageCount } from '../../shared/caller-trust/enterprise/loa-pdf.ts';
import {
  createRegistration, deleteRegistration, generateLoa, getRegistration, loaDocument, signAndSubmit,
  submitSignedLoa, updateRegistration, type RegistrationRow, type Signing,
} from '../../shared/caller-trust/enterprise/registrations.ts';
import { detailFields, RegistrationResponse, registrationView } from '../../shared/caller-trust/enterprise/views.ts';
import { decodeImage, fromBase64 } from '../../shared/caller-trust/images.ts';
import { validationError } from '../../shared/errors.ts';
import type { Ctx, Plugin } from '../http/types.ts';
import { UuidIdParams } from './schemas.ts';

/** The decoded size cap of an LOA uploaded to submit (its base64 fits the 1 MiB JSON body limit). */
export const SIGNED_LOA_MAX_BYTES = 700 * 1024;
/** The decoded size cap of a drawn signature PNG. */
export const DRAWN_SIGNATURE_MAX_BYTES = 200 * 1024;

const partialDetails = (description: string, extra: object = {}) =>
  Type.Partial(Type.Object(detailFields), { additionalProperties: false, description, ...extra });

const EXAMPLE_DETAILS: BusinessDetails = {
  legal_name: 'Acme Dental Group, LLC', ein: '74-1234567', business_type: 'llc', industry: 'Dental care',
  website: 'https://acmedental.example',
  registered_address: { line1: '500 Congress Ave', line2: 'Suite 200', city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' },
  authorized_contact: { name: 'Dana Ruiz', title: 'Chief Executive Officer', email: 'dana@acmedental.example', phone: '+15125550100' },
  phone_numbers: ['+15125550123', '+15125550124'],
};
const EXAMPLE_ID = '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70';
const EXAMPLE = {
  id: EXAMPLE_ID, status: 'DRAFT', ...EXAMPLE_DETAILS, rejection_reasons: [],
  loa: { unsigned: null, signed: null, signature_method: null },
  documents: [{ id: '0193a4c3-0d1e-7f22-8b4c-1a2b3c4d5e6f', name: 'articles-of-organization.pdf', content_type: 'application/pdf', size_bytes: 184213 }],
  submitted_at: null, decided_at: null, created_at: '2026-11-20T15:04:05.000Z', updated_at: '2026-11-20T15:04:05.000Z',
};
const loaExample = (version: string) => ({
  url: `https://api.example.com/v1/caller-trust/enterprise/${EXAMPLE_ID}/loa?version=${version}`,
  sha256: '9f2c1e0b7a4d3c2b1a09f8e7d6c5b4a392817e6d5c4b3a291807f6e5d4c3b2a1', size_bytes: 4871, created_at: '2026-11-20T15:10:00.000Z',
});
const PENDING_EXAMPLE = {
  ...EXAMPLE, status: 'PENDING_VETTING',
  loa: { unsigned: loaExample('unsigned'), signed: loaExample('signed'), signature_method: 'in_app' },
  submitted_at: '2026-11-20T15:10:00.000Z', updated_at: '2026-11-20T15:10:00.000Z',
};

const Data = Type.Object({ data: RegistrationResponse });
const IdParams = UuidIdParams('enterprise registration');
const ok = (ctx: { baseUrl: string }, status = 200) => (r: RegistrationRow) => ({ status, body: { data: registrationView(r, ctx.baseUrl) } });

const signFields = {
  signer_name: Type.String({ minLength: 1, maxLength: 120, description: 'Full name of the person signing for the business.' }),
  signer_title: Type.String({ minLength: 1, maxLength: 120, description: 'Their title.' }),
  signer_email: Type.String({ format: 'email', maxLength: 254, description: 'Their e-mail address (printed in the signature block and the audit trail).' }),
  typed_signature: Type.Optional(Type.String({ minLength: 1, maxLength: 120, description: 'A typed signature (usually the signer\'s name), rendered in a script face. Give this or drawn_signature_png.' })),
  drawn_signature_png: Type.Optional(Type.String({ minLength: 8, maxLength: Math.ceil(DRAWN_SIGNATURE_MAX_BYTES / 3) * 4 + 4, description: `A drawn signature: a PNG (base64, at most ${DRAWN_SIGNATURE_MAX_BYTES / 1024} KiB, at most 4 megapixels), decoded and re-encoded before it is placed. Give this or typed_signature.` })),
  consent: Type.Literal(true, { description: 'Must be true: the signer consents to sign electronically and to be bound by the LOA.' }),
};
const SignBody = Type.Object(signFields, { additionalProperties: false });
const ResignBody = Type.Object({
  ...signFields,
  changes: Type.Optional(partialDetails('Corrections to the business details, applied before the new LOA is generated and signed (the fixes vetting asked for).')),
}, { additionalProperties: false });
const SIGN_EXAMPLE = { signer_name: 'Dana Ruiz', signer_title: 'Chief Executive Officer', signer_email: 'dana@acmedental.example',
  typed_signature: 'Dana Ruiz', consent: true };

type SignBodyT = { signer_name: string; signer_title: string; signer_email: string; typed_signature?: string; drawn_signature_png?: string; consent: true };

/** The credential behind a request, for the LOA's audit trail. */
const signedBy = (ctx: Ctx<unknown, unknown, unknown>): Signing['signedBy'] =>
  ({ credential: ctx.principal.kind, keyId: ctx.principal.keyId, userId: ctx.principal.userId });

/** The signature of a sign request: exactly one of typed or drawn; a drawn one is decoded as PNG for real. */
async function signing(ctx: Ctx<SignBodyT, unknown, unknown>): Promise<Signing> {
  const b = ctx.body;
  const both = 'give exactly one of typed_signature or drawn_signature_png';
  if ((b.typed_signature === undefined) === (b.drawn_signature_png === undefined)) {
    throw validationError(b.typed_signature === undefined ? { typed_signature: both, drawn_signature_png: both } : { drawn_signature_png: both });
  }
  const meta = { signerName: b.signer_name, signerTitle: b.signer_title, signerEmail: b.signer_email, clientAddress: ctx.clientAddress,
    forwardedFor: ctx.headers['x-forwarded-for']?.slice(0, 200) ?? null, signedBy: signedBy(ctx) };
  if (b.typed_signature !== undefined) {
    if (!b.typed_signature.trim()) throw validationError({ typed_signature: 'must not be blank' });
    return { ...meta, signature: { kind: 'typed', text: b.typed_signature.trim() } };
  }
  const bytes = fromBase64(b.drawn_signature_png!);
  if (!bytes) throw validationError({ drawn_signature_png: 'must be base64' });
  if (bytes.length > DRAWN_SIGNATURE_MAX_BYTES) throw validationError({ drawn_signature_png: `exceeds ${DRAWN_SIGNATURE_MAX_BYTES} bytes` });
  const img = await decodeImage(bytes, { formats: ['png'], maxSide: 1000, limitPixels: 2000 * 2000 });
  if (!img.ok) throw validationError({ drawn_signature_png: img.reason });
  return { ...meta, signature: { kind: 'drawn', png: img.image.png } };
}

const STATE_ERRORS = ['not_found', 'state_conflict', 'idempotency_conflict'] as const;
const pinned = (id: boolean) => (id ? 'the registration {id}' : 'the primary registration (its APPROVED one, else its newest)');

export const callerTrustEnterpriseRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/caller-trust/enterprise', scope: 'caller_trust:write', tag: 'Enterprise Registration',
    summary: 'Create an enterprise registration draft',
    description: 'Creates a DRAFT with the legal business details. Every field is required except registered_address.line2. '
      + 'The EIN must be NN-NNNNNNN with a valid IRS campus prefix; every number must be held by the organization. '
      + 'Next: generate-loa to review or hand-sign the Letter of Authorization, then sign-and-submit or submit.',
    examples: { request: EXAMPLE_DETAILS, response: { data: EXAMPLE } },
    body: Type.Object(detailFields, { additionalProperties: false }),
    response: { status: 201, schema: Data }, errors: ['idempotency_conflict'],
    handler: async (ctx) => ok(ctx, 201)(await createRegistration(ctx.deps.db, ctx.principal.organizationId, ctx.body, ctx.idempotent(ok(ctx, 201)))),
  });
  routes.add({
    method: 'GET', path: '/v1/caller-trust/enterprise', scope: 'caller_trust:read', tag: 'Enterprise Registration',
    summary: 'Read the primary enterprise registration',
    description: 'Answers the organization\'s primary registration: its APPROVED one if it has one, else its newest '
      + 'registration that is not deleted. not_found when it has none. Read-only.',
    examples: { response: { data: PENDING_EXAMPLE } }, response: { status: 200, schema: Data }, errors: ['not_found'],
    handler: async (ctx) => ok(ctx)(await getRegistration(ctx.deps.db, ctx.principal.organizationId, null)),
  });
  routes.add({
    method: 'GET', path: '/v1/caller-trust/enterprise/{id}', scope: 'caller_trust:read', tag: 'Enterprise Registration',
    summary: 'Read an enterprise registration',
    description: 'Answers one registration of the organization (another organization\'s id is not_found). Read-only.',
    examples: { response: { data: PENDING_EXAMPLE } }, params: IdParams, response: { status: 200, schema: Data },
    handler: async (ctx) => ok(ctx)(await getRegistration(ctx.deps.db, ctx.principal.organizationId, ctx.params.id)),
  });
  routes.add({
    method: 'PATCH', path: '/v1/caller-trust/enterprise/{id}', scope: 'caller_trust:write', tag: 'Enterprise Registration',
    summary: 'Edit a draft enterprise registration',
    description: 'Changes the given business details (at least one; nested objects are replaced whole) of a DRAFT. Any '
      + 'other status: state_conflict naming it. The generated (unsigned) LOA no longer matches and is '
      + 'dropped; generate-loa makes a new one.',
    examples: { request: { industry: 'Dental and orthodontic care' }, response: { data: { ...EXAMPLE, industry: 'Dental and orthodontic care' } } },
    params: IdParams, body: partialDetails('The business details to change.', { minProperties: 1 }),
    response: { status: 200, schema: Data }, errors: [...STATE_ERRORS],
    handler: async (ctx) => ok(ctx)(await updateRegistration(ctx.deps.db, ctx.principal.organizationId, ctx.params.id,
      ctx.body as Partial<BusinessDetails>, ctx.idempotent(ok(ctx)))),
  });
  routes.add({
    method: 'DELETE', path: '/v1/caller-trust/enterprise/{id}', scope: 'caller_trust:write', tag: 'Enterprise Registration',
    summary: 'Delete a draft or rejected enterprise registration',
    description: 'Deletes a DRAFT or REJECTED registration (PENDING_VETTING and APPROVED: state_conflict). '
      + 'It is no longer readable; its record and LOAs are kept as history. Answers 204 with no body.',
    params: IdParams, response: { status: 204, description: 'Deleted' }, errors: [...STATE_ERRORS],
    handler: async (ctx) => {
      const reply = () => ({ status: 204 });
      await deleteRegistration(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(reply));
      return reply();
    },
  });

  for (const withId of [false, true]) {
    const base = withId ? '/v1/caller-trust/enterprise/{id}' : '/v1/caller-trust/enterprise';
    const params = withId ? { params: IdParams } : {};
    const id = (ctx: { params: unknown }) => (withId ? (ctx.params as { id: string }).id : null);
    routes.add({
      method: 'POST', path: `${base}/generate-loa`, scope: 'caller_trust:write', tag: 'Enterprise Registration',
      summary: withId ? 'Generate the LOA of an enterprise registration' : 'Generate the LOA of the primary enterprise registration',
      description: `Generates the Letter of Authorization PDF of ${pinned(withId)} from its current business details: a `
        + 'letter from the business to the platform operator it authorizes (named by the operator\'s PLATFORM_LEGAL_NAME '
        + 'and PLATFORM_LEGAL_ADDRESS), the numbers it covers and a signature page; every page is numbered and names the '
        + 'registration. loa.unsigned.url is where to download it (application/pdf) for review or hand signing; a new '
        + 'call replaces it. DRAFT or REJECTED only. service_unavailable when the operator has not set those settings.',
      examples: { response: { data: { ...EXAMPLE, loa: { unsigned: loaExample('unsigned'), signed: null, signature_method: null } } } },
      ...params, response: { status: 200, schema: Data }, errors: [...STATE_ERRORS, 'service_unavailable'],
      handler: async (ctx) => ok(ctx)(await generateLoa(ctx.deps, ctx.principal.organizationId, id(ctx), ctx.idempotent(ok(ctx)))),
    });
    routes.add({
      method: 'POST', path: `${base}/sign-and-submit`, scope: 'caller_trust:write', tag: 'Enterprise Registration',
      summary: withId ? 'Sign the LOA and submit an enterprise registration' : 'Sign the LOA and submit the primary enterprise registration',
      description: `Signs the LOA of ${pinned(withId)} (a DRAFT) in the app and moves it to PENDING_VETTING: the letter last `
        + 'generated (or a new one) gets the signature (typed, drawn in a script face, or a drawn PNG), the signer\'s name, '
        + 'title, email and the date in its signature block, and an audit-trail page: signed at, signer and email, the API '
        + 'key (and its user) that signed, client address and the SHA-256 of the unsigned document. consent must be true. '
        + 'Fires enterprise.status.updated; vetting decides later. service_unavailable as for generate-loa.',
      examples: { request: SIGN_EXAMPLE, response: { data: PENDING_EXAMPLE } },
      ...params, body: SignBody, response: { status: 200, schema: Data }, errors: [...STATE_ERRORS, 'service_unavailable'],
      handler: async (ctx) => {
        const s = await signing(ctx as Ctx<SignBodyT, unknown, unknown>);
        return ok(ctx)(await signAndSubmit(ctx.deps, ctx.principal.organizationId, id(ctx), 'sign_and_submit', s, undefined, ctx.idempotent(ok(ctx))));
      },
    });
    routes.add({
      method: 'POST', path: `${base}/submit`, scope: 'caller_trust:write', tag: 'Enterprise Registration',
      summary: withId ? 'Submit an enterprise registration with an LOA signed out of band' : 'Submit the primary enterprise registration with an LOA signed out of band',
      description: `Submits ${pinned(withId)} (DRAFT, or REJECTED to resubmit) with an LOA signed by hand: signed_loa_pdf is `
        + `the PDF as base64 in the JSON body (at most ${SIGNED_LOA_MAX_BYTES / 1024} KiB decoded, so the body stays under the `
        + '1 MiB limit). It must open as a PDF with at least one page. Moves to PENDING_VETTING and fires enterprise.status.updated.',
      examples: { request: { signed_loa_pdf: 'JVBERi0xLjcKJYGBgYEKCjUgMCBvYmoKPDwKL0ZpbHRlciAvRmxhdGVEZWNvZGUK...' },
        response: { data: { ...PENDING_EXAMPLE, loa: { ...PENDING_EXAMPLE.loa, signature_method: 'uploaded' } } } },
      ...params,
      body: Type.Object({ signed_loa_pdf: Type.String({ minLength: 8, maxLength: Math.ceil(SIGNED_LOA_MAX_BYTES / 3) * 4 + 4,
        description: 'The signed LOA PDF, base64.' }) }, { additionalProperties: false }),
      response: { status: 200, schema: Data }, errors: [...STATE_ERRORS],
      handler: async (ctx) => {
        const pdf = fromBase64(ctx.body.signed_loa_pdf);
        if (!pdf) throw validationError({ signed_loa_pdf: 'must be base64' });
        if (pdf.length > SIGNED_LOA_MAX_BYTES) throw validationError({ signed_loa_pdf: `exceeds ${SIGNED_LOA_MAX_BYTES} bytes` });
        if ((await pdfPageCount(pdf)) < 1) throw validationError({ signed_loa_pdf: 'is not a PDF (it does not open as one, or has no page)' });
        const meta = { clientAddress: ctx.clientAddress, forwardedFor: ctx.headers['x-forwarded-for']?.slice(0, 200) ?? null,
          signedBy: signedBy(ctx as Ctx<unknown, unknown, unknown>) };
        return ok(ctx)(await submitSignedLoa(ctx.deps, ctx.principal.organizationId, id(ctx), pdf, meta, ctx.idempotent(ok(ctx))));
      },
    });
  }

  routes.add({
    method: 'POST', path: '/v1/caller-trust/enterprise/{id}/resign', scope: 'caller_trust:write', tag: 'Enterprise Registration',
    summary: 'Re-sign a rejected enterprise registration',
    description: 'For a REJECTED registration: applies the corrections in changes (optional), generates a new LOA, signs it '
      + 'as sign-and-submit does and moves it back to PENDING_VETTING (a new vetting round; rejection_reasons are '
      + 'cleared). Any other status: state_conflict. Fires enterprise.status.updated.',
    examples: { request: { ...SIGN_EXAMPLE, changes: { ein: '74-1234568' } }, response: { data: { ...PENDING_EXAMPLE, ein: '74-1234568' } } },
    params: IdParams, body: ResignBody, response: { status: 200, schema: Data }, errors: [...STATE_ERRORS, 'service_unavailable'],
    handler: async (ctx) => {
      const s = await signing(ctx as unknown as Ctx<SignBodyT, unknown, unknown>);
      return ok(ctx)(await signAndSubmit(ctx.deps, ctx.principal.organizationId, ctx.params.id, 'resign', s,
        ctx.body.changes as Partial<BusinessDetails> | undefined, ctx.idempotent(ok(ctx))));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/caller-trust/enterprise/{id}/loa', scope: 'caller_trust:read', tag: 'Enterprise Registration',
    summary: 'Download the LOA PDF of an enterprise registration',
    description: 'Answers the LOA as application/pdf: version=unsigned (as generated) or version=signed (signed in the app, '
      + 'with its audit-trail page, or as uploaded); without version the signed one when there is one, else the '
      + 'unsigned one. not_found when there is no such document yet.',
    params: IdParams,
    query: Type.Object({ version: Type.Optional(Type.Unsafe<'unsigned' | 'signed'>({ type: 'string', enum: ['unsigned', 'signed'],
      description: 'unsigned or signed (default: signed if there is one).' })) }, { additionalProperties: false }),
    response: { status: 200, contentType: 'application/pdf', description: 'The LOA (PDF)' },
    handler: async (ctx) => {
      const doc = await loaDocument(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.query.version);
      return { status: 200, raw: doc.pdf, headers: { 'content-type': 'application/pdf', 'cache-control': 'private, no-store',
        'content-disposition': `inline; filename="loa-${doc.registrationId}-${doc.version}.pdf"` } };
    },
  });
};

