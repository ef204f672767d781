import { Type } from '@sinclair/typebox';
import {
  createSubEntity, deleteSubEntity, getSubEntity, listHipaaAudit, listSubEntities, updateSubEntity, type SubEntityRow,
} from '../../shared/sub-entities/sub-entities.ts';
import { HipaaAuditResponse, hipaaAuditView, SubEntityResponse, subEntityView } from '../../shared/sub-entities/views.ts';
import { assertWholeOrganization, limitOf, within } from '../../shared/sub-entities/limit.ts';
import { notFound } from '../../shared/errors.ts';
import type { Principal } from '../../shared/accounts/principal.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Plugin } from '../http/types.ts';
import { ListMeta, NOT_PROTOTYPE_KEY, UuidIdParams } from './schemas.ts';

const TAG = 'Sub-entities';
const described = SubEntityResponse.properties;
const fields = {
  name: Type.String({ minLength: 1, maxLength: 200, description: described.name.description }),
  external_ref: Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()], { description: described.external_ref.description }),
  // Keys of 1-40 characters, never one that reaches a prototype (refused as an unknown field, as everywhere).
  metadata: Type.Record(Type.String({ pattern: `${NOT_PROTOTYPE_KEY}.{1,40}$` }), Type.String({ maxLength: 500 }),
    { additionalProperties: false, maxProperties: 20, description: 'String key/value pairs of your own: at most 20 keys of up to 40 characters, values up to 500. Replaces the whole map.' }),
};
const IdParams = UuidIdParams('sub-entity');

/** A credential limited to a sub-entity sees only that one: any other id is not_found, as another organization's. */
const visible = (p: Principal, id: string): string => {
  if (!within(p, id)) throw notFound(`Sub-entity ${id}`);
  return id;
};


const SUB_ENTITY_EXAMPLE = {
  id: '0193a5e1-2f4c-7a10-8b3d-5e6f7a8b9c0d', name: 'Acme Dental — Downtown', external_ref: 'clinic-014',
  metadata: { region: 'west' }, hipaa_mode: false, created_at: '2026-11-20T15:04:05.000Z', updated_at: '2026-11-20T15:04:05.000Z',
};
const AUDIT_EXAMPLE = {
  id: '0193a5e9-0b1c-7d2e-8f30-41a2b3c4d5e6', sub_entity_id: SUB_ENTITY_EXAMPLE.id, old_value: false, new_value: true,
  credential_kind: 'api_key', credential_id: '3c7d9e2a-6b4f-4a1e-8d5c-1f9a0b7e6c24', api_key_id: '3c7d9e2a-6b4f-4a1e-8d5c-1f9a0b7e6c24',
  user_id: '5b1f0c2e-8a3d-4e6f-9b7a-2c4d6e8f0a1b', client_address: '203.0.113.7', changed_at: '2026-11-21T08:00:00.000Z',
  reason: 'Clinic starts handling patient records',
};

const HIPAA = 'While hipaa_mode is true, every call-content route answers content_policy_forbidden for the sub-entity\'s '
  + 'calls (GET /v1/calls/{id}/transcript, GET /v1/calls/{id}/recording; recording_url is null on its call records), the '
  + 'webhooks of its calls carry no content, and the body of its SMS messages is null on list and read routes once the '
  + 'message is no longer queued (body_withheld true).';

export const subEntityRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/sub-entities', scope: 'sub_entities:write', tag: TAG, summary: 'Create a sub-entity',
    description: 'Creates a unit of the organization (a clinic, a branch, a client account) with HIPAA mode off. Give its '
      + 'id as sub_entity_id to phone numbers (PATCH /v1/phone-numbers/{id}), contacts, calls and SMS.',
    examples: { request: { name: SUB_ENTITY_EXAMPLE.name, external_ref: 'clinic-014', metadata: { region: 'west' } },
      response: { data: SUB_ENTITY_EXAMPLE } },
    body: Type.Object({ name: fields.name, external_ref: Type.Optional(fields.external_ref), metadata: Type.Optional(fields.metadata) },
      { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: SubEntityResponse }) },
    errors: ['forbidden'],
    handler: async (ctx) => {
      assertWholeOrganization(ctx.principal, 'creating sub-entities');
      const reply = (s: SubEntityRow) => ({ status: 201, body: { data: subEntityView(s) } });
      return reply(await createSubEntity(ctx.deps.db, ctx.principal.organizationId, ctx.body, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/sub-entities', scope: 'sub_entities:read', tag: TAG, summary: 'List sub-entities',
    description: 'Lists the organization\'s sub-entities, newest first; paginated with limit, order and cursor. hipaa_mode '
      + 'filters (send it again with each cursor). A key limited to a sub-entity sees only its own (any other id answers '
      + '404 not_found; creating, deleting and changing hipaa_mode answer 403 forbidden). Read-only.',
    examples: { response: { data: [SUB_ENTITY_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object({ ...PageQuery, hipaa_mode: Type.Optional(Type.Boolean({ description: 'Only sub-entities with HIPAA mode on (true) or off (false).' })) },
      { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(SubEntityResponse, { description: 'The sub-entities, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('sub_entities', query);
      const rows = await listSubEntities(deps.db, principal.organizationId, page,
        { hipaa_mode: query.hipaa_mode, id: limitOf(principal) ?? undefined });
      const out = deps.cursors.page('sub_entities', page, rows, (s) => s.id);
      return { status: 200, body: { data: out.data.map(subEntityView), meta: out.meta } };
    },
  });
  routes.add({
    method: 'GET', path: '/v1/sub-entities/{id}', scope: 'sub_entities:read', tag: TAG, summary: 'Read a sub-entity',
    description: 'Answers one sub-entity of the organization. Read-only.',
    examples: { response: { data: SUB_ENTITY_EXAMPLE } },
    params: IdParams, response: { status: 200, schema: Type.Object({ data: SubEntityResponse }) },
    handler: async ({ deps, principal, params }) =>
      ({ status: 200, body: { data: subEntityView(await getSubEntity(deps.db, principal.organizationId, visible(principal, params.id))) } }),
  });
  routes.add({
    method: 'PATCH', path: '/v1/sub-entities/{id}', scope: 'sub_entities:write', tag: TAG, summary: 'Change a sub-entity',
    description: 'Changes the fields given (at least one); omitted fields keep their values, external_ref null clears it, '
      + 'metadata replaces the whole map. hipaa_mode also needs compliance:write, which no key or role gets by default '
      + '(403 scope_missing with fields.hipaa_mode otherwise, and nothing is changed); each change of it is audited '
      + '(GET /v1/sub-entities/{id}/hipaa-audit). ' + HIPAA,
    examples: { request: { hipaa_mode: true }, response: { data: { ...SUB_ENTITY_EXAMPLE, hipaa_mode: true, updated_at: '2026-11-21T08:00:00.000Z' } } },
    params: IdParams,
    body: Type.Object({ name: Type.Optional(fields.name), external_ref: Type.Optional(fields.external_ref),
      metadata: Type.Optional(fields.metadata),
      hipaa_mode: Type.Optional(Type.Boolean({ description: 'Turn HIPAA mode on or off; needs compliance:write.' })),
      hipaa_reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Why hipaa_mode changes (kept with the audit row; only with hipaa_mode).' })) },
    { additionalProperties: false, minProperties: 1 }),
    response: { status: 200, schema: Type.Object({ data: SubEntityResponse }) },
    errors: ['scope_missing', 'forbidden'],
    handler: async (ctx) => {
      const reply = (s: SubEntityRow) => ({ status: 200, body: { data: subEntityView(s) } });
      return reply(await updateSubEntity(ctx.deps.db, ctx.principal.organizationId, visible(ctx.principal, ctx.params.id), ctx.body,
        { principal: ctx.principal, clientAddress: ctx.clientAddress }, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'PUT', path: '/v1/sub-entities/{id}/hipaa', scope: 'compliance:write', tag: TAG, summary: 'Turn HIPAA mode on or off',
    description: 'Sets hipaa_mode (the same as PATCH /v1/sub-entities/{id} with hipaa_mode, for credentials that hold '
      + 'compliance:write without sub_entities:write). Audited when the value changes; setting the current value changes '
      + 'nothing and writes no audit row. ' + HIPAA,
    examples: { request: { hipaa_mode: true, reason: 'The clinic now handles patient records.' }, response: { data: { ...SUB_ENTITY_EXAMPLE, hipaa_mode: true } } },
    params: IdParams,
    body: Type.Object({
      hipaa_mode: Type.Boolean({ description: 'true: on; false: off.' }),
      reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Why (kept with the audit row).' })),
    }, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: SubEntityResponse }) },
    errors: ['forbidden'],
    handler: async (ctx) => {
      const reply = (s: SubEntityRow) => ({ status: 200, body: { data: subEntityView(s) } });
      return reply(await updateSubEntity(ctx.deps.db, ctx.principal.organizationId, visible(ctx.principal, ctx.params.id), { hipaa_mode: ctx.body.hipaa_mode, hipaa_reason: ctx.body.reason },
        { principal: ctx.principal, clientAddress: ctx.clientAddress }, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/sub-entities/{id}/hipaa-audit', scope: 'sub_entities:read', tag: TAG, summary: 'List HIPAA mode changes',
    description: 'The audit trail of the sub-entity\'s HIPAA mode: who changed it (credential, API key, user), when, from '
      + 'which address (the connection\'s peer address), and the old and new value; newest first, paginated with limit, '
      + 'order and cursor. Read-only.',
    examples: { response: { data: [AUDIT_EXAMPLE], meta: { page_size: 20 } } },
    params: IdParams, query: Type.Object(PageQuery, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(HipaaAuditResponse, { description: 'The changes, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, params, query }) => {
      const page = deps.cursors.params('sub_entity_hipaa_audit', query);
      const rows = await listHipaaAudit(deps.db, principal.organizationId, visible(principal, params.id), page);
      const out = deps.cursors.page('sub_entity_hipaa_audit', page, rows, (a) => a.id);
      return { status: 200, body: { data: out.data.map(hipaaAuditView), meta: out.meta } };
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/sub-entities/{id}', scope: 'sub_entities:write', tag: TAG, summary: 'Delete a sub-entity',
    description: 'Deletes a sub-entity nothing belongs to. While held phone numbers, live contacts, calls or SMS messages '
      + 'belong to it the answer is 409 state_conflict (fields.entity sub_entity, fields.status in_use) naming what: move '
      + 'numbers and contacts first (PATCH with another sub_entity_id or null); calls and SMS messages are history that '
      + 'keeps its sub-entity and its HIPAA boundary, so a sub-entity that has any stays. Its HIPAA audit rows are kept. '
      + 'Answers 204 with no body.',
    params: IdParams, response: { status: 204, description: 'Deleted' },
    errors: ['state_conflict', 'forbidden'],
    handler: async (ctx) => {
      assertWholeOrganization(ctx.principal, 'deleting sub-entities');
      const reply = () => ({ status: 204 });
      await deleteSubEntity(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(reply));
      return reply();
    },
  });
};
