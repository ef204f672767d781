// The Display Identity Record (Branded Calling) as the API shows it: the response schema and its view.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../response-schemas.ts';
import { CALL_REASON_MAX, DIR_STATUSES, DISPLAY_NAME_MAX, NETWORKS, type BrandRow } from './brand.ts';

export const BrandResponse = Type.Object({
  status: Type.Unsafe<(typeof DIR_STATUSES)[number]>({ type: 'string', enum: [...DIR_STATUSES], description: 'draft, submitted (under review) or approved.' }),
  display_name: Nullable(Type.String(), `The name shown on the called phone (at most ${DISPLAY_NAME_MAX} characters): the approved legal business name, or it without case, punctuation or corporate-suffix differences.`),
  call_reason: Nullable(Type.String(), `Why you call, shown under the name (at most ${CALL_REASON_MAX} characters).`),
  logo: Nullable(Type.Object({
    url: Type.String({ description: 'Where to download it (GET, brand:read): our PNG re-encoding, metadata stripped.' }),
    content_type: Type.Literal('image/png', { description: 'Always image/png (what we re-encoded).' }),
    width: Type.Integer({ description: 'Width in px (square).' }),
    height: Type.Integer({ description: 'Height in px (square).' }),
    size_bytes: Type.Integer({ description: 'Size of the stored PNG.' }),
    sha256: Type.String({ description: 'SHA-256 of the stored PNG (hex).' }),
  }), 'The logo, or null.'),
  enterprise_id: Nullable(Type.String({ format: 'uuid' }), 'The APPROVED enterprise registration the last submission was checked against.'),
  networks: Type.Array(Type.Object({
    network: Type.Unsafe<(typeof NETWORKS)[number]>({ type: 'string', enum: [...NETWORKS], description: 'ATT, TMOBILE or VERIZON.' }),
    status: Type.Unsafe<'pending' | 'live'>({ type: 'string', enum: ['pending', 'live'], description: 'pending (submitted or rolling out) or live (the network shows the display).' }),
    updated_at: Type.String({ format: 'date-time', description: 'When this network\'s status last changed.' }),
  }), { description: 'Rollout per network of the submitted or approved display; empty for a draft.' }),
  submitted_at: Nullable(Type.String({ format: 'date-time' }), 'When it was last submitted.'),
  approved_at: Nullable(Type.String({ format: 'date-time' }), 'When review approved it; null otherwise.'),
  created_at: Type.String({ format: 'date-time', description: 'When it was created.' }),
  updated_at: Type.String({ format: 'date-time', description: 'When it last changed.' }),
}, { description: 'The Display Identity Record (Branded Calling) of the organization.' });

/** The API shape of the Display Identity Record: its logo as a download link under baseUrl. */
export const brandView = (b: BrandRow, baseUrl: string): Static<typeof BrandResponse> => ({
  status: b.status, display_name: b.display_name, call_reason: b.call_reason,
  logo: b.logo_sha256 ? {
    url: `${baseUrl}/v1/caller-trust/brand/logo?v=${b.logo_sha256.slice(0, 16)}`, content_type: 'image/png',
    width: b.logo_side, height: b.logo_side, size_bytes: b.logo_size, sha256: b.logo_sha256,
  } : null,
  enterprise_id: b.enterprise_id,
  networks: NETWORKS.filter((n) => b.networks[n]).map((n) => ({ network: n, ...b.networks[n]! })),
  submitted_at: b.submitted_at?.toISOString() ?? null, approved_at: b.approved_at?.toISOString() ?? null,
  created_at: b.created_at.toISOString(), updated_at: b.updated_at.toISOString(),
});
