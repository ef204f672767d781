// Response schemas of number reputation, beside their views (store.ts: reputationView; remediation.ts:
// remediationView). The route file (gateway/routes/caller-trust-reputation.ts) declares them for OpenAPI and the
// response check.
import { Type } from '@sinclair/typebox';
import { MOBILE_NETWORKS, RISK_LEVELS } from '../../mobile-networks.ts';
import { Nullable } from '../../response-schemas.ts';

const CarrierEvidence = Type.Object({
  risk_level: Nullable(Type.Union(RISK_LEVELS.map((r) => Type.Literal(r))),
    'LOW, MEDIUM or HIGH; null: the provider has no answer for this carrier (unavailable, never zero risk).'),
  displayed_label: Nullable(Type.String(), 'What the called party\'s handset shows when the number is flagged (MEDIUM or HIGH), e.g. "Spam Risk"; null otherwise.'),
  checked_at: Nullable(Type.String({ format: 'date-time' }), 'When the provider answered for this carrier; null: never checked.'),
}, { description: 'The evidence of one carrier.' });

export const ReputationResponse = Type.Object({
  phone_number: Type.String({ description: 'The number (E.164).' }),
  phone_id: Type.Integer({ description: 'The number\'s id (GET /v1/phone-numbers).' }),
  carriers: Type.Object(Object.fromEntries(MOBILE_NETWORKS.map((c) => [c, { ...CarrierEvidence, description: `Evidence on ${c}.` }])),
    { description: 'Per carrier (ATT, TMOBILE, VERIZON) the cached evidence.' }),
  flagged: Type.Boolean({ description: 'True when any carrier reports MEDIUM or HIGH.' }),
  checked_at: Nullable(Type.String({ format: 'date-time' }), 'The oldest carrier check; null when some carrier was never checked.'),
  stale: Type.Boolean({ description: 'True when the evidence is older than the freshness window (or incomplete): the background refresh will re-check it.' }),
  provider: Nullable(Type.String(), 'The provider that answered (sandbox, telnyx); null: never checked.'),
  enrolled_at: Nullable(Type.String({ format: 'date-time' }), 'When the number was enrolled in monitoring (background refreshes); null: not enrolled.'),
}, { description: 'The cached reputation evidence of one number.' });

export const RemediationResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The case id.' }),
  phone_number: Type.String({ description: 'The flagged number (E.164).' }),
  kind: Type.Union([Type.Literal('own_brand'), Type.Literal('umbrella')], { description: 'own_brand: under the organization\'s approved enterprise; umbrella: under the platform\'s registration.' }),
  status: Type.Union([Type.Literal('open'), Type.Literal('in_review'), Type.Literal('resolved'), Type.Literal('rejected')],
    { description: 'open -> in_review -> resolved | rejected.' }),
  carriers: Type.Array(Type.String(), { description: 'The carriers the number was flagged on when the case was opened.' }),
  price_cents: Type.Integer({ description: 'What opening the case was charged, in cents.' }),
  rejection_reason: Nullable(Type.String(), 'Why the provider rejected the case; null unless rejected.'),
  created_at: Type.String({ format: 'date-time', description: 'When the case was opened.' }),
  updated_at: Type.String({ format: 'date-time', description: 'When the case last changed.' }),
  in_review_at: Nullable(Type.String({ format: 'date-time' }), 'When the provider started reviewing; null before.'),
  closed_at: Nullable(Type.String({ format: 'date-time' }), 'When the case was resolved or rejected; null while open.'),
}, { description: 'A remediation case.' });
