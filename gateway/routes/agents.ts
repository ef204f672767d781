import { Type } from '@sinclair/typebox';
import { createAgent, type AgentRow, deleteAgent, getAgent, listAgents, updateAgent } from '../../shared/agents/agents.ts';
import { AgentResponse, agentView } from '../../shared/agents/views.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Plugin, Reply } from '../http/types.ts';
import { ListMeta, UuidIdParams } from './schemas.ts';

const described = AgentResponse.properties;
const fields = {
  name: Type.String({ minLength: 1, maxLength: 100, description: described.name.description }),
  greeting: Type.String({ minLength: 1, maxLength: 1000, description: described.greeting.description }),
  prompt: Type.String({ maxLength: 20000, description: described.prompt.description }),
  voice: Type.String({ minLength: 1, maxLength: 64, description: described.voice.description }),
};

const Agent = AgentResponse;
const IdParams = UuidIdParams('agent');

const AGENT_EXAMPLE = {
  id: '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70', name: 'Appointment reminder',
  greeting: 'Hi, this is Acme Dental calling to confirm your appointment tomorrow at 10 AM.',
  prompt: 'Confirm the appointment. If the patient wants to reschedule, offer Tuesday or Thursday morning.',
  voice: 'neutral', created_at: '2026-11-20T15:04:05.000Z', updated_at: '2026-11-20T15:04:05.000Z',
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
      voice: Type.Optional(fields.voice) }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: Agent }) },
    handler: async (ctx) => {
      const reply = (a: AgentRow) => ({ status: 201, body: { data: agentView(a) } });
      return reply(await createAgent(ctx.deps.db, ctx.principal.organizationId, ctx.body, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/agents', scope: 'agents:read', tag: 'Agents', summary: 'List voice agents',
    description: 'Lists the organization\'s saved voice agents, newest first; paginated with limit, order and cursor. Read-only.',
    examples: { response: { data: [AGENT_EXAMPLE], meta: { page_size: 20 } } },
    query: Type.Object(PageQuery, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Agent, { description: 'The agents, newest first (or oldest with order=asc).' }), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('agents', query);
      const out = deps.cursors.page('agents', page, await listAgents(deps.db, principal.organizationId, page), (a) => a.id);
      return { status: 200, body: { data: out.data.map(agentView), meta: out.meta } };
    },
  });
  routes.add({
    method: 'GET', path: '/v1/agents/{id}', scope: 'agents:read', tag: 'Agents', summary: 'Read a voice agent',
    description: 'Answers one saved voice agent of the organization. Read-only.',
    examples: { response: { data: AGENT_EXAMPLE } },
    params: IdParams, response: { status: 200, schema: Type.Object({ data: Agent }) },
    handler: async ({ deps, principal, params }) =>
      ({ status: 200, body: { data: agentView(await getAgent(deps.db, principal.organizationId, params.id)) } }),
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
      prompt: Type.Optional(fields.prompt), voice: Type.Optional(fields.voice) }, { additionalProperties: false, minProperties: 1 }),
    response: { status: 200, schema: Type.Object({ data: Agent }) },
    handler: async (ctx) => {
      const reply = (a: AgentRow) => ({ status: 200, body: { data: agentView(a) } });
      return reply(await updateAgent(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.body, ctx.idempotent(reply)));
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
      await deleteAgent(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(reply));
      return reply();
    },
  });
};
