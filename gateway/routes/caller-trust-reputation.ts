import { Type } from '@sinclair/typebox';
import { FRESH_CHECK_PRICE_CENTS, REMEDIATION_PRICE_CENTS } from '../../shared/caller-trust/prices.ts';
import { MOBILE_NETWORKS, RISK_LEVELS } from '../../shared/mobile-networks.ts';
import { ReputationRefresher } from '../../shared/caller-trust/reputation/refresh.ts';
import { getRemediation, listRemediations, openRemediation, remediationView, type RemediationRow } from '../../shared/caller-trust/reputation/remediation.ts';
import { RemediationResponse, ReputationResponse } from '../../shared/caller-trust/reputation/schemas.ts';
import { listReputation, ownedNumber, readEvidence, reputationView } from '../../shared/caller-trust/reputation/store.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { GatewayDeps, Plugin } from '../http/types.ts';
import { ListMeta, UuidIdParams } from './schemas.ts';

// Number reputation: cached evidence per carrier, paid fresh checks, the list with filters, remediation cases.
// The rules live in shared/caller-trust/reputation.

const TAG = 'Reputation';

/** The handler's own part of the answer (beside the view's data). */
const Refresh = Type.Object({
  charged: Type.Boolean({ description: 'True when this request paid for a new provider lookup; false when it shared one (a concurrent or recent paid refresh).' }),
  price_cents: Type.Integer({ description: 'The price of one fresh check, in cents.' }),
}, { description: 'Present with fresh=true: what the refresh cost this request.' });

const EVIDENCE_EXAMPLE = {
  phone_number: '+14155550128', phone_id: 42,
  carriers: {
    ATT: { risk_level: 'MEDIUM', displayed_label: 'Spam Risk', checked_at: '2026-11-23T08:00:00.000Z' },
    TMOBILE: { risk_level: 'LOW', displayed_label: null, checked_at: '2026-11-23T08:00:00.000Z' },
    VERIZON: { risk_level: null, displayed_label: null, checked_at: '2026-11-23T08:00:00.000Z' },
  },
  flagged: true, checked_at: '2026-11-23T08:00:00.000Z', stale: false, provider: 'sandbox', enrolled_at: '2026-11-20T15:04:05.000Z',
};
const CASE_EXAMPLE = {
  id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f71', phone_number: '+14155550128', kind: 'umbrella', status: 'open',
  carriers: ['ATT', 'VERIZON'], price_cents: REMEDIATION_PRICE_CENTS.umbrella, rejection_reason: null,
  created_at: '2026-11-23T08:05:00.000Z', updated_at: '2026-11-23T08:05:00.000Z', in_review_at: null, closed_at: null,
};

const provider = (deps: GatewayDeps) => deps.reputation;

export const callerTrustReputationRoutes: Plugin = (routes) => {
  routes.add({
    method: 'GET', path: '/v1/caller-trust/reputation/numbers/{phone}', scope: 'caller_trust:read', tag: TAG,
    summary: 'Read a number\'s reputation',
    description: 'Answers the cached evidence of one of the organization\'s numbers: per carrier (ATT, TMOBILE, VERIZON) '
      + 'the risk level, the label shown when flagged and when it was checked; a null risk level means the provider has no '
      + `answer for that carrier (unavailable), never zero risk. With fresh=true the provider is asked now: a paid check of `
      + `${FRESH_CHECK_PRICE_CENTS} cents (shared/caller-trust/prices.ts) added to today's spend under the daily spend cap `
      + '(402 spend_cap_reached when the cap refuses, 402 no_active_subscription when the organization\'s subscription is '
      + 'inactive; nothing asked either way). Requests for the same number that arrive while a '
      + 'refresh runs, or within 60 seconds of the last paid one, share it: one lookup, one charge. Write the + of the '
      + 'number as %2B or as is.',
    examples: { response: { data: EVIDENCE_EXAMPLE } },
    params: Type.Object({ phone: Type.String({ maxLength: 32, description: 'A number of the organization in E.164 (+14155550123).' }) }),
    query: Type.Object({
      fresh: Type.Optional(Type.Boolean({ default: false, description: 'true: a paid live lookup now; false (default): the cached evidence, free.' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: ReputationResponse, refresh: Type.Optional(Refresh) }) },
    errors: ['spend_cap_reached', 'no_active_subscription', 'provider_api_error', 'service_unavailable'],
    handler: async ({ deps, principal, params, query }) => {
      const arrivedAt = Date.now();
      const n = await ownedNumber(deps.db, principal.organizationId, params.phone);
      let refresh: { charged: boolean; price_cents: number } | undefined;
      if (query.fresh) {
        const { cap } = await deps.db.one<{ cap: number }>('SELECT daily_spend_cap_cents::float8 AS cap FROM organizations WHERE id = $1', [principal.organizationId]);
        const r = await new ReputationRefresher({ db: deps.db, redis: deps.redis, key: deps.key, provider: provider(deps) }).paid(n, cap, arrivedAt);
        refresh = { charged: r.charged, price_cents: FRESH_CHECK_PRICE_CENTS };
      }
      const rows = (await readEvidence(deps.db, [n.id])).get(n.id) ?? [];
      return { status: 200, body: { data: reputationView(n, rows, deps.config.reputation.freshnessMs), ...(refresh ? { refresh } : {}) } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/caller-trust/reputation/numbers', scope: 'caller_trust:read', tag: TAG,
    summary: 'List the numbers\' reputation',
    description: 'Lists the cached evidence of every number the organization holds, newest number first; paginated with '
      + 'limit, order and cursor. Filters: risk_level (a carrier reports it; UNAVAILABLE: a carrier has no answer), '
      + 'carrier (narrows risk_level to that carrier), flagged, stale (older than the freshness window, 24 hours by '
      + 'default, or never checked). Read-only and free: nothing is asked of the provider.',
    examples: { response: { data: [EVIDENCE_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object({
      ...PageQuery,
      risk_level: Type.Optional(Type.Union([...RISK_LEVELS, 'UNAVAILABLE'].map((r) => Type.Literal(r)),
        { description: 'Only numbers with this risk level on some carrier (or on carrier); UNAVAILABLE: with no answer.' })),
      carrier: Type.Optional(Type.Union(MOBILE_NETWORKS.map((c) => Type.Literal(c)), { description: 'With risk_level: only this carrier\'s evidence counts; alone: numbers with evidence on it.' })),
      flagged: Type.Optional(Type.Boolean({ description: 'true: flagged (MEDIUM or HIGH) on some carrier; false: on none.' })),
      stale: Type.Optional(Type.Boolean({ description: 'true: evidence older than the freshness window or incomplete; false: fresh.' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(ReputationResponse, { description: 'The numbers\' evidence.' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('reputation-numbers', query);
      const { freshnessMs } = deps.config.reputation;
      const rows = await listReputation(deps.db, principal.organizationId,
        { risk_level: query.risk_level, carrier: query.carrier, flagged: query.flagged, stale: query.stale } as Parameters<typeof listReputation>[2],
        freshnessMs, page);
      const out = deps.cursors.page('reputation-numbers', page, rows, (r) => r.id);
      const evidence = await readEvidence(deps.db, out.data.map((r) => r.id));
      return { status: 200, body: { data: out.data.map((r) => reputationView(r, evidence.get(r.id) ?? [], freshnessMs)), meta: out.meta } };
    },
  });

  routes.add({
    method: 'POST', path: '/v1/caller-trust/reputation/remediations', scope: 'caller_trust:write', tag: TAG,
    summary: 'Open a remediation case',
    description: 'Asks the provider to re-evaluate a flagged number (MEDIUM or HIGH on some carrier in its cached '
      + 'evidence; 409 number_not_flagged otherwise). kind own_brand files under the organization\'s APPROVED enterprise '
      + `registration (409 own_brand_not_approved without one), umbrella under the platform's. Charged ${REMEDIATION_PRICE_CENTS.own_brand} `
      + `cents (own_brand) or ${REMEDIATION_PRICE_CENTS.umbrella} cents (umbrella) under the daily spend cap; an organization `
      + 'whose subscription is inactive is refused (402 no_active_subscription, nothing charged or opened). One case per number '
      + 'at a time (409 remediation_in_progress). The case moves open -> in_review -> resolved | rejected as the provider '
      + 'answers; a resolved number shows cleared evidence from its next refresh.',
    examples: { request: { phone_number: '+14155550128', kind: 'umbrella' }, response: { data: CASE_EXAMPLE } },
    body: Type.Object({
      phone_number: Type.String({ maxLength: 32, description: 'A flagged number of the organization (E.164).' }),
      kind: Type.Union([Type.Literal('own_brand'), Type.Literal('umbrella')], { description: 'own_brand (needs an approved enterprise) or umbrella.' }),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: RemediationResponse }) },
    errors: ['not_found', 'own_brand_not_approved', 'number_not_flagged', 'remediation_in_progress', 'spend_cap_reached',
      'no_active_subscription', 'idempotency_conflict'],
    handler: async (ctx) => {
      const { deps, principal, body } = ctx;
      const reply = (r: RemediationRow) => ({ status: 201, body: { data: remediationView(r) } });
      const p = provider(deps);
      return reply(await openRemediation({ db: deps.db, redis: deps.redis, key: deps.key, queues: deps.queues, provider: p,
        firstPollMs: p.remediationPollMs }, principal.organizationId, body, ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'GET', path: '/v1/caller-trust/reputation/remediations', scope: 'caller_trust:read', tag: TAG,
    summary: 'List remediation cases',
    description: 'Lists the organization\'s remediation cases, newest first; paginated with limit, order and cursor; '
      + 'filter by status or phone_number. Read-only.',
    examples: { response: { data: [CASE_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object({
      ...PageQuery,
      status: Type.Optional(Type.Union(['open', 'in_review', 'resolved', 'rejected'].map((s) => Type.Literal(s)), { description: 'Only cases in this status.' })),
      phone_number: Type.Optional(Type.String({ maxLength: 32, description: 'Only cases of this number (E.164).' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(RemediationResponse, { description: 'The cases, newest first.' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('reputation-remediations', query);
      const rows = await listRemediations(deps.db, principal.organizationId,
        { status: query.status as RemediationRow['status'] | undefined, phone_number: query.phone_number }, page);
      const out = deps.cursors.page('reputation-remediations', page, rows, (r) => r.id);
      return { status: 200, body: { data: out.data.map(remediationView), meta: out.meta } };
    },
  });

  routes.add({
    method: 'GET', path: '/v1/caller-trust/reputation/remediations/{id}', scope: 'caller_trust:read', tag: TAG,
    summary: 'Read a remediation case',
    description: 'Answers one remediation case of the organization with its status. Read-only.',
    examples: { response: { data: CASE_EXAMPLE } },
    params: UuidIdParams('remediation case'),
    response: { status: 200, schema: Type.Object({ data: RemediationResponse }) },
    handler: async ({ deps, principal, params }) =>
      ({ status: 200, body: { data: remediationView(await getRemediation(deps.db, principal.organizationId, params.id)) } }),
  });
};
