import { Type } from '@sinclair/typebox';
import { agentView, createAgent, type AgentRow, deleteAgent, getAgent, listAgents, updateAgent } from '../../shared/agents/agents.ts';
import { PageQuery } from '../../shared/pagination.ts';
import type { Plugin, Reply } from '../http/types.ts';
import { ListMeta } from './schemas.ts';

const fields = {
  name: Type.String({ minLength: 1, maxLength: 100, description: 'Shown in the dashboard and on call records.' }),
  greeting: Type.String({ minLength: 1, maxLength: 1000, description: 'First sentence the agent speaks when answered.' }),
  prompt: Type.String({ maxLength: 20000, description: 'Instructions for the conversation.' }),
  voice: Type.String({ minLength: 1, maxLength: 64, description: 'Voice name of the speech engine (sandbox: any name; default "neutral").' }),
};

const Agent = Type.Object({
  id: Type.String({ format: 'uuid' }), name: Type.String(), greeting: Type.String(), prompt: Type.String(),
  voice: Type.String(), created_at: Type.String({ format: 'date-time' }), updated_at: Type.String({ format: 'date-time' }),
});
const IdParams = Type.Object({ id: Type.String() });

export const agentRoutes: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/agents', scope: 'agents:write', tag: 'Agents', summary: 'Create a voice agent.',
    body: Type.Object({ name: fields.name, greeting: Type.Optional(fields.greeting), prompt: Type.Optional(fields.prompt),
      voice: Type.Optional(fields.voice) }, { additionalProperties: false }),
    response: { status: 201, schema: Type.Object({ data: Agent }) },
    handler: async (ctx) => {
      const reply = (a: AgentRow): Reply => ({ status: 201, body: { data: agentView(a) } });
      return reply(await createAgent(ctx.deps.db, ctx.principal.organizationId, ctx.body, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'GET', path: '/v1/agents', scope: 'agents:read', tag: 'Agents', summary: 'List voice agents, newest first.',
    query: Type.Object(PageQuery, { additionalProperties: false }),
    response: { status: 200, schema: Type.Object({ data: Type.Array(Agent), meta: ListMeta }) },
    handler: async ({ deps, principal, query }) => {
      const page = deps.cursors.params('agents', query);
      const out = deps.cursors.page('agents', page, await listAgents(deps.db, principal.organizationId, page), (a) => a.id);
      return { status: 200, body: { data: out.data.map(agentView), meta: out.meta } };
    },
  });
  routes.add({
    method: 'GET', path: '/v1/agents/{id}', scope: 'agents:read', tag: 'Agents', summary: 'Read a voice agent.',
    params: IdParams, response: { status: 200, schema: Type.Object({ data: Agent }) },
    handler: async ({ deps, principal, params }) =>
      ({ status: 200, body: { data: agentView(await getAgent(deps.db, principal.organizationId, params.id)) } }),
  });
  routes.add({
    method: 'PATCH', path: '/v1/agents/{id}', scope: 'agents:write', tag: 'Agents', summary: 'Change a voice agent; omitted fields stay.',
    params: IdParams,
    body: Type.Object({ name: Type.Optional(fields.name), greeting: Type.Optional(fields.greeting),
      prompt: Type.Optional(fields.prompt), voice: Type.Optional(fields.voice) }, { additionalProperties: false, minProperties: 1 }),
    response: { status: 200, schema: Type.Object({ data: Agent }) },
    handler: async (ctx) => {
      const reply = (a: AgentRow): Reply => ({ status: 200, body: { data: agentView(a) } });
      return reply(await updateAgent(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.body, ctx.idempotent(reply)));
    },
  });
  routes.add({
    method: 'DELETE', path: '/v1/agents/{id}', scope: 'agents:write', tag: 'Agents',
    summary: 'Delete a voice agent (calls that used it keep their history).',
    params: IdParams, response: { status: 204, description: 'Deleted' },
    handler: async (ctx) => {
      const reply = (): Reply => ({ status: 204 });
      await deleteAgent(ctx.deps.db, ctx.principal.organizationId, ctx.params.id, ctx.idempotent(reply));
      return reply();
    },
  });
};
