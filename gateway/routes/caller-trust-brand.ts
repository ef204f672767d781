import { Type } from '@sinclair/typebox';
import {
  brandLogo, CALL_REASON_MAX, DISPLAY_NAME_MAX, getBrand, NETWORKS, putBrand, submitBrand, type BrandInput, type BrandRow,
} from '../../shared/caller-trust/brand/brand.ts';
import { BrandResponse, brandView } from '../../shared/caller-trust/brand/views.ts';
import { decodeImage, fromBase64, MIME_FORMAT } from '../../shared/caller-trust/images.ts';
import { validationError } from '../../shared/errors.ts';
import type { Plugin } from '../http/types.ts';
import { Nullable } from './schemas.ts';

/** Logo limits: decoded size cap (its base64 fits the 1 MiB JSON body limit), the smallest and largest side, and the
 *  side we store it at (at most). */
export const LOGO_MAX_BYTES = 512 * 1024;
export const LOGO_MIN_SIDE = 200;
export const LOGO_MAX_INPUT_SIDE = 4096;
export const LOGO_STORED_MAX_SIDE = 512;

const Data = Type.Object({ data: BrandResponse });

const EXAMPLE = {
  status: 'draft', display_name: 'Acme Dental Group', call_reason: 'Appointment reminders and scheduling',
  logo: { url: 'https://api.example.com/v1/caller-trust/brand/logo?v=5d41402abc4b2a76', content_type: 'image/png', width: 512,
    height: 512, size_bytes: 48213, sha256: '5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592' },
  enterprise_id: null, networks: [], submitted_at: null, approved_at: null,
  created_at: '2026-11-20T15:04:05.000Z', updated_at: '2026-11-20T15:04:05.000Z',
};
const SUBMITTED = {
  ...EXAMPLE, status: 'submitted', enterprise_id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70',
  networks: NETWORKS.map((network) => ({ network, status: 'pending', updated_at: '2026-11-21T09:00:00.000Z' })),
  submitted_at: '2026-11-21T09:00:00.000Z', updated_at: '2026-11-21T09:00:00.000Z',
};

/** The logo of a PUT, decoded for real: the declared type must be what the bytes decode as. */
async function logoOf(logo: { content_type: string; data: string }): Promise<NonNullable<BrandInput['logo']>> {
  const bytes = fromBase64(logo.data);
  if (!bytes) throw validationError({ 'logo.data': 'must be base64' });
  if (bytes.length > LOGO_MAX_BYTES) throw validationError({ 'logo.data': `exceeds ${LOGO_MAX_BYTES} bytes` });
  const declared = MIME_FORMAT[logo.content_type];
  const out = await decodeImage(bytes, { formats: [declared], maxSide: LOGO_STORED_MAX_SIDE, limitPixels: LOGO_MAX_INPUT_SIDE ** 2 });
  if (!out.ok) throw validationError({ 'logo.data': `${out.reason}; it was declared ${logo.content_type}` });
  const { width, height } = out.image;
  if (width !== height) throw validationError({ 'logo.data': `must be square (it is ${width} x ${height} px)` });
  if (width < LOGO_MIN_SIDE) throw validationError({ 'logo.data': `must be at least ${LOGO_MIN_SIDE} x ${LOGO_MIN_SIDE} px (it is ${width} x ${height})` });
  if (width > LOGO_MAX_INPUT_SIDE) throw validationError({ 'logo.data': `must be at most ${LOGO_MAX_INPUT_SIDE} px a side` });
  return { png: out.image.png, side: Math.min(width, LOGO_STORED_MAX_SIDE) };
}

export const callerTrustBrandRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/caller-trust/brand', scope: 'brand:read', tag: 'Branded Calling',
    summary: 'Read the Display Identity Record',
    description: 'Answers the organization\'s Display Identity Record with its approval status and rollout per network. '
      + 'not_found before the first PUT. Read-only.',
    examples: { response: { data: SUBMITTED } }, response: { status: 200, schema: Data }, errors: ['not_found'],
    handler: async (ctx) => ({ status: 200, body: { data: brandView(await getBrand(ctx.deps.db, ctx.principal.organizationId), ctx.baseUrl) } }),
  });
  routes.add({
    method: 'PUT', path: '/v1/caller-trust/brand', scope: 'brand:write', tag: 'Branded Calling',
    summary: 'Create or update the Display Identity Record draft',
    description: 'Creates the draft, or changes the fields given (omitted fields keep their values; logo: null removes the '
      + `logo). display_name: at most ${DISPLAY_NAME_MAX} characters; when the organization has an APPROVED enterprise `
      + 'registration it must be its legal name (case, periods, commas and a corporate suffix such as LLC or Inc. may '
      + `differ), and submit checks it again. call_reason: at most ${CALL_REASON_MAX} characters. logo: a square PNG, JPEG `
      + `or WebP, ${LOGO_MIN_SIDE} to ${LOGO_MAX_INPUT_SIDE} px a side, at most ${LOGO_MAX_BYTES / 1024} KiB, base64; it is `
      + 'decoded for real (a file whose bytes are not the declared type, or damaged, is refused), its metadata is '
      + `dropped and it is stored re-encoded as PNG (at most ${LOGO_STORED_MAX_SIDE} px a side). While submitted: `
      + 'state_conflict. On an approved record the change makes it a draft again (to be submitted anew).',
    examples: {
      request: { display_name: 'Acme Dental Group', call_reason: 'Appointment reminders and scheduling',
        logo: { content_type: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUgAAAgAAAAIACAYAAAD0eNT6AAAAAXNSR0IArs4c6QAA...' } },
      response: { data: EXAMPLE },
    },
    body: Type.Object({
      display_name: Type.Optional(Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX, description: `Display name (at most ${DISPLAY_NAME_MAX} characters).` })),
      call_reason: Type.Optional(Type.String({ minLength: 1, maxLength: CALL_REASON_MAX, description: `Call reason (at most ${CALL_REASON_MAX} characters).` })),
      logo: Type.Optional(Nullable(Type.Object({
        content_type: Type.Unsafe<'image/png' | 'image/jpeg' | 'image/webp'>({ type: 'string', enum: Object.keys(MIME_FORMAT), description: 'image/png, image/jpeg or image/webp: what the bytes must decode as.' }),
        // The size cap is checked on the decoded bytes (logo.data: exceeds ...); the body limit bounds the text.
        data: Type.String({ minLength: 8, description: `The image file, base64 (at most ${LOGO_MAX_BYTES / 1024} KiB decoded).` }),
      }, { additionalProperties: false }), 'The logo file, or null to remove it.')),
    }, { additionalProperties: false, minProperties: 1 }),
    response: { status: 200, schema: Data }, errors: ['state_conflict', 'idempotency_conflict'],
    handler: async (ctx) => {
      const input: BrandInput = { display_name: ctx.body.display_name, call_reason: ctx.body.call_reason };
      if (ctx.body.display_name !== undefined && !ctx.body.display_name.trim()) throw validationError({ display_name: 'must not be blank' });
      if (ctx.body.call_reason !== undefined && !ctx.body.call_reason.trim()) throw validationError({ call_reason: 'must not be blank' });
      if (ctx.body.logo !== undefined) input.logo = ctx.body.logo === null ? null : await logoOf(ctx.body.logo);
      const reply = (b: BrandRow) => ({ status: 200, body: { data: brandView(b, ctx.baseUrl) } });
      return reply(await putBrand(ctx.deps.db, ctx.principal.organizationId, input, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'POST', path: '/v1/caller-trust/brand/submit', scope: 'brand:write', tag: 'Branded Calling',
    summary: 'Submit the Display Identity Record for review',
    description: 'Submits the draft for review: it needs display_name, call_reason and logo (validation_error naming the '
      + 'missing ones) and an APPROVED enterprise registration (enterprise_not_approved otherwise), and the display name '
      + 'must match its legal name. Status becomes submitted and every network pending; when review approves, each '
      + 'network goes live in turn. Not a draft: state_conflict.',
    examples: { response: { data: SUBMITTED } },
    response: { status: 200, schema: Data }, errors: ['not_found', 'state_conflict', 'enterprise_not_approved', 'idempotency_conflict'],
    handler: async (ctx) => {
      const reply = (b: BrandRow) => ({ status: 200, body: { data: brandView(b, ctx.baseUrl) } });
      return reply(await submitBrand(ctx.deps, ctx.principal.organizationId, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/caller-trust/brand/logo', scope: 'brand:read', tag: 'Branded Calling',
    summary: 'Download the Display Identity Record logo',
    description: 'Answers the logo as we stored it: image/png, re-encoded from the upload with its metadata dropped. '
      + 'The v query parameter of logo.url only busts caches (any value is accepted). not_found without a logo.',
    query: Type.Object({ v: Type.Optional(Type.String({ maxLength: 64, description: 'Cache-busting version (ignored).' })) }, { additionalProperties: false }),
    response: { status: 200, contentType: 'image/png', description: 'The logo (PNG)' }, errors: ['not_found'],
    handler: async (ctx) => {
      const logo = await brandLogo(ctx.deps.db, ctx.principal.organizationId);
      return { status: 200, raw: logo.png, headers: { 'content-type': 'image/png', etag: `"${logo.sha256}"`, 'cache-control': 'private, max-age=300',
        'x-content-type-options': 'nosniff' } };
    },
  });
};
