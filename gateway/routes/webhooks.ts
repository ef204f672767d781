import { Type } from '@sinclair/typebox';
import { PageQuery } from '../../shared/pagination.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../shared/webhooks/event-types.ts';
import {
  attemptView, createSubscription, deleteSubscription, enableSubscription, getSubscription, listAttempts, listSubscriptions,
  subscriptionView, type CreatedSubscription,
} from '../../shared/webhooks/subscriptions.ts';
import type { Plugin, Reply } from '../http/types.ts';
import { ListMeta, Nullable } from './schemas.ts';


const Subscription = Type.Object({
  id: Type.String({ description: 'Fixed prefix whsub_' }),
  webhook_url: Type.String({ format: 'uri' }),
  event_type: Type.String(),
  workflow_id: Nullable(Type.String()),
  campaign_id: Nullable(Type.String()),
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled')], { description: 'disabled after the receiver answered 410 Gone' }),
  disabled_reason: Nullable(Type.String()),
  disabled_at: Nullable(Type.String({ format: 'date-time' })),
  created_at: Type.String({ format: 'date-time' }),
});

const CreatedSubscription = Type.Composite([Subscription, Type.Object({
  secret: Type.String({ description: 'Standard Webhooks signing secret (whsec_...). Shown only in this response.' }),
})]);

const DeliveryAttempt = Type.Object({
  id: Type.Integer(),
  webhook_id: Type.String({ description: 'Delivery id: the webhook-id header, the same on every retry' }),
  event_id: Type.String({ format: 'uuid' }),
  event_type: Type.String(),
  attempt: Type.Integer({ minimum: 1 }),
  outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('retrying'), Type.Literal('failed')]),
  response_status: Nullable(Type.Integer()),
  latency_ms: Type.Integer(),
  error: Nullable(Type.String()),
  attempted_at: Type.String({ format: 'date-time' }),
  next_attempt_at: Nullable(Type.String({ format: 'date-time' })),
});

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const webhookRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/api/v1/webhook_subscriptions', scope: 'webhooks:write', tag: 'Webhooks',
    summary: 'Subscribe a URL to one event type. Answers the id and the signing secret (shown once).',
    body: Type.Object({
      webhook_url: Type.String({ minLength: 1, maxLength: 2048, description: 'HTTPS URL of a public receiver' }),
      event_type: Type.String({ minLength: 1, maxLength: 100, description: `One of: ${SUBSCRIBABLE_EVENT_TYPES.join(', ')}` }),
      workflow_id: Type.Optional(Type.String({ maxLength: 200 })),
      campaign_id: Type.Optional(Type.String({ maxLength: 200 })),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: CreatedSubscription }) },
    errors: ['subscription_exists', 'subscription_limit_exceeded'],
    handler: async (ctx) => {
      const reply = (data: CreatedSubscription): Reply => ({ status: 201, body: { data } });
      return reply(await createSubscription(ctx.deps.db, ctx.principal.organizationId, ctx.body, ctx.deps.config.webhookAllowInsecure,
        ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'GET', path: '/api/v1/webhook_subscriptions', scope: 'webhooks:read', tag: 'Webhooks',
    summary: 'The organization\'s webhook subscriptions, newest first.',
    query: Type.Object({ ...PageQuery, event_type: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Subscription), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('webhook_subscriptions', query);
      const { rows, total } = await listSubscriptions(deps.db, principal.organizationId, page, query.event_type);
      const out = deps.cursors.page('webhook_subscriptions', page, rows, (r) => r.seq, total);
      return { status: 200, body: { data: out.data.map(subscriptionView), meta: out.meta } };
    },
  });

  routes.add({
    method: 'GET', path: '/api/v1/webhook_subscriptions/{id}', scope: 'webhooks:read', tag: 'Webhooks',
    summary: 'One webhook subscription (without its secret).',
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: Subscription }) },
    handler: async ({ deps, principal, params }) => ({
      status: 200, body: { data: subscriptionView(await getSubscription(deps.db, principal.organizationId, params.id)) },
    }),
  });

  routes.add({
    method: 'DELETE', path: '/api/v1/webhook_subscriptions/{id}', scope: 'webhooks:write', tag: 'Webhooks',
    summary: 'Remove a subscription: nothing more is delivered to it, pending retries included.',
    params: IdParams,
    response: { status: 204, description: 'No Content' },
    handler: async (ctx) => {
      const reply = (): Reply => ({ status: 204 });
      await deleteSubscription(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(reply));
      return reply();
    },
  });

  routes.add({
    method: 'POST', path: '/api/v1/webhook_subscriptions/{id}/enable', scope: 'webhooks:write', tag: 'Webhooks',
    summary: 'Turn a subscription disabled by a 410 back on. Later events are delivered; those in between are not.',
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: Subscription }) },
    handler: async (ctx) => {
      const reply = (data: unknown): Reply => ({ status: 200, body: { data } });
      return reply(await enableSubscription(ctx.deps.db, ctx.principal.organizationId, ctx.params.id,
        ctx.deps.config.webhookAllowInsecure, ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'GET', path: '/api/v1/webhook_subscriptions/{id}/deliveries', scope: 'webhooks:read', tag: 'Webhooks',
    summary: 'Every delivery attempt to this subscription, newest first (status, latency, error, next retry).',
    params: IdParams,
    query: Type.Object({ ...PageQuery, webhook_id: Type.Optional(Type.String({ maxLength: 64, description: 'Only the attempts of one delivery' })) },
      { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(DeliveryAttempt), meta: ListMeta }) },
    handler: async ({ deps, principal, params, query }) => {
      const page = deps.cursors.params('webhook_deliveries', query);
      const { rows, total } = await listAttempts(deps.db, principal.organizationId, params.id, page, query.webhook_id);
      const out = deps.cursors.page('webhook_deliveries', page, rows, (r) => r.id, total);
      return { status: 200, body: { data: out.data.map(attemptView), meta: out.meta } };
    },
  });
};
