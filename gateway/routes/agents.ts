import { Type } from '@sinclair/typebox';
import { createAgent, type AgentRow, deleteAgent, getAgent, listAgents, updateAgent } from '../../shared/agents/agents.ts';
import { AgentResponse, agentView } from '../../shared/agents/views.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Plugin, Reply } from '../http/types.ts';
import { ListMeta, UuidIdParams } from './schemas.ts';
import type { Db } from '../../shared/db.ts';
import type { Principal } from '../../shared/accounts/principal.ts';
import { assertWithin, createIn, limitOf, listFilter } from '../../shared/sub-entities/limit.ts';
import { assertSubEntityFilter } from '../../shared/sub-entities/sub-entities.ts';

const described = AgentResponse.properties;
const fields = {
  name: Type.String({ minLength: 1, maxLength: 100, description: described.name.description }),
  greeting: Type.String({ minLength: 1, maxLength: 1000, description: described.greeting.description }),
  prompt: Type.String({ maxLength: 20000, description: described.prompt.description }),
  voice: Type.String({ minLength: 1, maxLength: 64, description: described.voice.description }),
  sub_entity_id: Type.Union([Type.String(), Type.Null()], { description: 'The sub-entity the agent belongs to (one of your '
    + 'organization\'s, else validation_error); null: none. A key limited to a sub-entity: omitted means its own.' }),
};

/** An agent read by id through the sub-entity rule: another sub-entity's (or the organization's) agent is not_found
 *  for a limited key, as another organization's is. */
const agentFor = async (db: Db, p: Principal, id: string) => assertWithin(p, await getAgent(db, p.organizationId, id), `Agent ${id}`);
const guardAgent = async (db: Db, p: Principal, id: string) => { if (limitOf(p) !== null) await agentFor(db, p, id); };

const Agent = AgentResponse;
const IdParams = UuidIdParams('agent');

const AGENT_EXAMPLE = {
  id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70', name: 'Appointment reminder',
  greeting: 'Hi, this is Acme Dental calling to confirm your appointment tomorrow at 10 AM.',
  prompt: 'Confirm the appointment. If the patient wants to reschedule, offer Tuesday or Thursday morning.',
  voice: 'neutral', sub_entity_id: null, created_at: '2026-11-20T15:04:05.000Z', updated_at: '2026-11-20T15:04:05.000Z',
};

export const agentRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/agents', scope: 'agents:write', tag: 'Agents', summary: 'Create a voice agent',
    description: 'Saves a voice agent for AI calls: name is required; greeting defaults to a generic introduction, '
      + 'prompt to empty and voice to "neutral". Calls use it by agent_id (POST /v1/calls) and keep a copy of its '
      + 'settings, so later changes do not alter calls already placed.',
    examples: {
      request: { name: AGENT_EXAMPLE.name, greeting: AGENT_EXAMPLE.greeting, prompt: AGENT_EXAMPLE.prompt, voice: 'neutral' },
      response: { data: AGENT_EXAMPLE },
    },
    body: Type.Object({ name: fields.name, greeting: Type.Optional(fields.greeting), prompt: Type.Optional(fields.prompt),
      voice: Type.Optional(fields.voice), sub_entity_id: Type.Optional(fields.sub_entity_id) }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: Agent }) },
    handler: async (ctx) => {
      const reply = (a: AgentRow) => ({ status: 201, body: { data: agentView(a) } });
      const input = { ...ctx.body, sub_entity_id: createIn(ctx.principal, ctx.body.sub_entity_id) };
      return reply(await createAgent(ctx.deps.db, ctx.principal.organizationId, input, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/agents', scope: 'agents:read', tag: 'Agents', summary: 'List voice agents',
    description: 'Lists the organization\'s saved voice agents, newest first; paginated with limit, order and cursor; '
      + '`sub_entity_id` lists one sub-entity\'s (a key limited to a sub-entity sees only its own). Read-only.',
    examples: { response: { data: [AGENT_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object({ ...PageQuery, sub_entity_id: Type.Optional(Type.String({ description: 'Only the agents of this sub-entity.' })) },
      { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Agent, { description: 'The agents, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      assertSubEntityFilter(query.sub_entity_id);
      const page = deps.cursors.params('agents', query);
      const out = deps.cursors.page('agents', page,
        await listAgents(deps.db, principal.organizationId, page, { sub_entity_id: listFilter(principal, query.sub_entity_id) }), (a) => a.id);
      return { status: 200, body: { data: out.data.map(agentView), meta: out.meta } };
    },
  });
  routes.add({
    method: 'GET', path: '/v1/agents/{id}', scope: 'agents:read', tag: 'Agents', summary: 'Read a voice agent',
    description: 'Answers one saved voice agent of the organization. Read-only.',
    examples: { response: { data: AGENT_EXAMPLE } },
    params: IdParams, response: { status: 200, schema: Type.Object({ data: Agent }) },
    handler: async ({ deps, principal, params }) =>
      ({ status: 200, body: { data: agentView(await agentFor(deps.db, principal, params.id)) } }),
  });
  routes.add({
    method: 'PATCH', path: '/v1/agents/{id}', scope: 'agents:write', tag: 'Agents', summary: 'Change a voice agent',
    description: 'Changes the fields given (at least one) and sets updated_at; omitted fields keep their values. Calls '
      + 'already placed keep the settings they started with.',
    examples: {
      request: { greeting: 'Hello from Acme Dental! Calling about your visit tomorrow at 10 AM.' },
      response: { data: { ...AGENT_EXAMPLE, greeting: 'Hello from Acme Dental! Calling about your visit tomorrow at 10 AM.',
        updated_at: '2026-11-21T08:00:00.000Z' } },
    },
    params: IdParams,
    body: Type.Object({ name: Type.Optional(fields.name), greeting: Type.Optional(fields.greeting),
      prompt: Type.Optional(fields.prompt), voice: Type.Optional(fields.voice), sub_entity_id: Type.Optional(fields.sub_entity_id) },
    { additionalProperties: false, minProperties: 1 }),
    response: { status: 200, schema: Type.Object({ data: Agent }) },
    handler: async (ctx) => {
      const reply = (a: AgentRow) => ({ status: 200, body: { data: agentView(a) } });
      await guardAgent(ctx.deps.db, ctx.principal, ctx.params.id);
      const patch = ctx.body.sub_entity_id === undefined ? ctx.body : { ...ctx.body, sub_entity_id: createIn(ctx.principal, ctx.body.sub_entity_id) };
      return reply(await updateAgent(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, patch, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/agents/{id}', scope: 'agents:write', tag: 'Agents',
    summary: 'Delete a voice agent',
    description: 'Deletes the agent: it can no longer be used by agent_id. Calls that used it keep their records and '
      + 'agent_id. Answers 204 with no body.',
    params: IdParams, response: { status: 204, description: 'Deleted' },
    handler: async (ctx) => {
      const reply = () => ({ status: 204 });
      await guardAgent(ctx.deps.db, ctx.principal, ctx.params.id);
      await deleteAgent(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(reply));
      return reply();
    },
  });
};
