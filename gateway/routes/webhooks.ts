import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../shared/pagination.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../shared/webhooks/event-types.ts';
import {
  createSubscription, deleteSubscription, enableSubscription, getSubscription, listAttempts, listSubscriptions,
  type CreatedSubscription as CreatedRow,
} from '../../shared/webhooks/subscriptions.ts';
import { sendTestEvent, type TestDelivery } from '../../shared/webhooks/test-event.ts';
import {
  AttemptResponse, attemptView, CreatedSubscriptionResponse, SubscriptionResponse, subscriptionView, TestDeliveryResponse,
} from '../../shared/webhooks/views.ts';
import type { Plugin, Reply } from '../http/types.ts';
import { ListMeta } from './schemas.ts';


const Subscription = SubscriptionResponse;
const CreatedSubscription = CreatedSubscriptionResponse;
const DeliveryAttempt = AttemptResponse;

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'The subscription id (whsub_...).' }) });

const SUB_EXAMPLE = {
  id: 'whsub_4TqZ8mR2vN6xK1pLc9Wd3Ya', webhook_url: 'https://hooks.acme-dental.example/openline', event_type: 'call_completed',
  workflow_id: null, campaign_id: 'spring-recall', status: 'active', disabled_reason: null, disabled_at: null,
  created_at: '2026-11-20T15:04:05.000Z',
};
const ATTEMPT_EXAMPLE = {
  id: 88231, webhook_id: 'msg_Hk3v9QxW2mZr7TnB5cLp0aYsE1d', event_id: '0193a4d1-2b6c-7f4e-8a9d-3e5f1c7b2a60',
  event_type: 'call_completed', attempt: 2, outcome: 'retrying', response_status: 500, latency_ms: 184, error: 'HTTP 500',
  attempted_at: '2026-11-20T15:10:15.000Z', next_attempt_at: '2026-11-20T15:10:35.000Z',
  request: {
    headers: { 'content-type': 'application/json', 'webhook-id': 'msg_Hk3v9QxW2mZr7TnB5cLp0aYsE1d', 'webhook-timestamp': '1763651415',
      'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=', 'user-agent': 'openline-webhooks/1.0' },
    body: '{"id":"0193a4d1-2b6c-7f4e-8a9d-3e5f1c7b2a60","event_type":"call_completed","occurred_at":"2026-11-20T15:09:55.000Z","data":{"call_id":"0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98","status":"COMPLETED"}}',
  },
  response: { content_type: 'text/plain', body: 'database is down', truncated: false },
};

export const webhookRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/api/v1/webhook_subscriptions', scope: 'webhooks:write', tag: 'Webhooks',
    summary: 'Subscribe a URL to an event type',
    description: 'Creates an active subscription: from now on each event of event_type in the organization is POSTed '
      + 'to webhook_url (at least once; dedupe on the webhook-id header), signed with the returned secret per Standard '
      + 'Webhooks. Several URLs may subscribe to one event type (each gets its own delivery); the same URL only once per '
      + 'event type (subscription_exists). At most 100 live subscriptions per organization (subscription_limit_exceeded). '
      + 'Failed deliveries are retried 14 times over about 23 hours; a 410 Gone disables the subscription.',
    examples: {
      request: { webhook_url: SUB_EXAMPLE.webhook_url, event_type: 'call_completed', campaign_id: 'spring-recall' },
      response: { data: { ...SUB_EXAMPLE, secret: 'whsec_MfKQ9r8GKYqXWlRZoT1o0cEl3vWxY2dKzJ7bNQm4Hsw=' } },
    },
    body: Type.Object({
      webhook_url: Type.String({ minLength: 1, maxLength: 2048, description: 'HTTPS URL of a public receiver: no user name '
        + 'or password, and a host that is or resolves only to globally reachable addresses (no loopback, private or '
        + 'metadata address).' }),
      event_type: Type.String({ minLength: 1, maxLength: 100, description: `The event to deliver, by its exact (case-sensitive) name, one of: ${SUBSCRIBABLE_EVENT_TYPES.join(', ')}` }),
      workflow_id: Type.Optional(Type.String({ maxLength: 200, description: 'Only events of this workflow (a task id of /v1/tasks: workflow_contact_completed carries it); events of no workflow are not delivered.' })),
      campaign_id: Type.Optional(Type.String({ maxLength: 200, description: 'Only events of this campaign (campaign_id of a task); events of no campaign are not delivered.' })),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: CreatedSubscription }) },
    errors: ['subscription_exists', 'subscription_limit_exceeded'],
    handler: async (ctx) => {
      const reply = (data: CreatedRow) => ({ status: 201, body: { data } });
      return reply(await createSubscription(ctx.deps.db, ctx.principal.organizationId, ctx.body, ctx.deps.config.webhookAllowInsecure,
        ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'GET', path: '/api/v1/webhook_subscriptions', scope: 'webhooks:read', tag: 'Webhooks',
    summary: 'List webhook subscriptions',
    description: 'Lists the organization\'s subscriptions (active and disabled, not deleted), newest first, optionally '
      + 'of one event_type; paginated with limit, order and cursor. Secrets are never shown again. Read-only.',
    examples: { response: { data: [SUB_EXAMPLE], meta: { total_results: 1, page_size: 20 } } },
    query: Type.Object({ ...PageQuery, event_type: Type.Optional(Type.String({ maxLength: 100, description: 'Only subscriptions to this event type.' })) },
      { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Subscription, { description: 'The subscriptions, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('webhook_subscriptions', query);
      const { rows, total } = await listSubscriptions(deps.db, principal.organizationId, page, query.event_type);
      const out = deps.cursors.page('webhook_subscriptions', page, rows, (r) => r.seq, total);
      return { status: 200, body: { data: out.data.map(subscriptionView), meta: out.meta } };
    },
  });

  routes.add({
    method: 'GET', path: '/api/v1/webhook_subscriptions/{id}', scope: 'webhooks:read', tag: 'Webhooks',
    summary: 'Read a webhook subscription',
    description: 'Answers one subscription of the organization, without its secret. A deleted subscription is not_found. Read-only.',
    examples: { response: { data: SUB_EXAMPLE } },
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: Subscription }) },
    handler: async ({ deps, principal, params }) => ({
      status: 200, body: { data: subscriptionView(await getSubscription(deps.db, principal.organizationId, params.id)) },
    }),
  });

  routes.add({
    method: 'DELETE', path: '/api/v1/webhook_subscriptions/{id}', scope: 'webhooks:write', tag: 'Webhooks',
    summary: 'Delete a webhook subscription',
    description: 'Deletes the subscription: no further event is delivered to it, and retries still pending are dropped. '
      + 'It disappears from list and read (not_found), but its attempt log stays readable at .../deliveries. Answers 204.',
    params: IdParams,
    response: { status: 204, description: 'No Content' },
    handler: async (ctx) => {
      const reply = () => ({ status: 204 });
      await deleteSubscription(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(reply));
      return reply();
    },
  });

  routes.add({
    method: 'POST', path: '/api/v1/webhook_subscriptions/{id}/enable', scope: 'webhooks:write', tag: 'Webhooks',
    summary: 'Re-enable a disabled subscription',
    description: 'Sets a disabled subscription active again once its receiver is back; the URL is checked again against '
      + 'the URL rule (validation_error with fields.webhook_url otherwise). Events from then on are delivered; those '
      + 'that occurred while it was disabled are not replayed. On an active subscription it changes nothing.',
    examples: { response: { data: SUB_EXAMPLE } },
    params: IdParams,
    response: { status: 200, schema: Type.Object({ data: Subscription }) },
    handler: async (ctx) => {
      const reply = (data: Static<typeof SubscriptionResponse>) => ({ status: 200, body: { data } });
      return reply(await enableSubscription(ctx.deps.db, ctx.principal.organizationId, ctx.params.id,
        ctx.deps.config.webhookAllowInsecure, ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'POST', path: '/api/v1/webhook_subscriptions/{id}/test', scope: 'webhooks:write', tag: 'Webhooks',
    summary: 'Send a test event',
    description: 'Queues one delivery of a test event to this subscription\'s URL, through the same path as every event: '
      + 'signed with the subscription\'s secret (Standard Webhooks headers), retried on the same schedule when the receiver '
      + 'fails, and logged in the attempt log (GET .../deliveries, filter with webhook_id). The body is the usual envelope '
      + 'with event_type webhook.test and data.test true, so a receiver can tell it from real events; it is sent to this '
      + 'subscription only, whatever its event_type, workflow_id or campaign_id. A disabled subscription answers '
      + 'state_conflict (re-enable it first). Answers 202: the delivery happens within seconds.',
    examples: {
      response: { data: {
        webhook_id: 'msg_Zp4kW9sQ2xV7nB3mLc8Rt1yHd0e', event_id: '0193a4d1-2b6c-7f4e-8a9d-3e5f1c7b2a61', event_type: 'webhook.test',
        subscription_id: SUB_EXAMPLE.id,
        payload: { id: '0193a4d1-2b6c-7f4e-8a9d-3e5f1c7b2a61', event_type: 'webhook.test', occurred_at: '2026-11-20T15:12:00.000Z',
          data: { test: true, subscription_id: SUB_EXAMPLE.id, subscribed_event_type: 'call_completed',
            message: 'A test event from openline: deliveries of call_completed to this URL are signed with this subscription\'s secret.' } },
      } },
    },
    params: IdParams,
    response: { status: 202, schema: Type.Object({ data: TestDeliveryResponse }) },
    errors: ['state_conflict'],
    handler: async (ctx) => {
      const reply = (data: TestDelivery) => ({ status: 202, body: { data } });
      return reply(await sendTestEvent(ctx.deps.db, ctx.deps.queues, ctx.principal.organizationId, ctx.params.id,
        ctx.deps.config.webhookRetryScale, ctx.idempotent(reply)));
    },
  });

  routes.add({
    method: 'GET', path: '/api/v1/webhook_subscriptions/{id}/deliveries', scope: 'webhooks:read', tag: 'Webhooks',
    summary: 'List delivery attempts',
    description: 'Lists the attempt log of the subscription, newest first, optionally of one delivery (webhook_id): '
      + 'each attempt\'s outcome, the receiver\'s status, latency, error, when the next retry is due, the request it sent '
      + '(headers and the exact body) and the start of the answer (its first 2 KiB and content type); with call_id, only '
      + 'the attempts of the events that call caused (new_call, call_completed, the disposition events, phone_call.ended). Readable also '
      + 'after the subscription was deleted; kept EVENTS_RETENTION_DAYS (30 by default). Read-only.',
    examples: { response: { data: [ATTEMPT_EXAMPLE], meta: { total_results: 1, page_size: 20 } } },
    params: IdParams,
    query: Type.Object({
      ...PageQuery,
      webhook_id: Type.Optional(Type.String({ maxLength: 64, description: 'Only the attempts of one delivery' })),
      call_id: Type.Optional(Type.String({ format: 'uuid', description: 'Only the attempts of the events of this call (a call id of /v1/calls).',
        examples: ['0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98'] })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(DeliveryAttempt, { description: 'The attempts, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, params, query }) => {
      const { webhook_id, call_id, ...pq } = query;
      const list = call_id ? `webhook_deliveries:call:${call_id}` : 'webhook_deliveries';
      const page = deps.cursors.params(list, pq);
      const { rows, total } = await listAttempts(deps.db, principal.organizationId, params.id, page, webhook_id, call_id);
      const out = deps.cursors.page(list, page, rows, (r) => r.id, total);
      return { status: 200, body: { data: out.data.map(attemptView), meta: out.meta } };
    },
  });
};
