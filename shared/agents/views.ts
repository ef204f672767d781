// The voice agent as the API shows it: its response schema and the view that builds it.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import type { AgentRow } from './agents.ts';

export const AgentResponse = Type.Object({
  id: Type.String({ format: 'uuid', description: 'The agent id; pass it as agent_id to POST /v1/calls.' }),
  name: Type.String({ description: 'Shown in the dashboard and on call records.' }),
  greeting: Type.String({ description: 'First sentence the agent speaks when answered.' }),
  prompt: Type.String({ description: 'Instructions for the conversation.' }),
  voice: Type.String({ description: 'Voice name of the speech engine (sandbox: any name; default "neutral").' }),
  sub_entity_id: Nullable(Type.String({ format: 'uuid' }), 'The sub-entity the agent belongs to; null: the organization\'s.'),
  created_at: Type.String({ format: 'date-time', description: 'When the agent was created.' }),
  updated_at: Type.String({ format: 'date-time', description: 'When the agent was last changed.' }),
}, { description: 'A voice agent.' });

export const agentView = (a: AgentRow): Static<typeof AgentResponse> => ({
  id: a.id,
  name: a.name,
  greeting: a.greeting,
  prompt: a.prompt,
  voice: a.voice,
  sub_entity_id: a.sub_entity_id,
  created_at: a.created_at.toISOString(),
  updated_at: a.updated_at.toISOString(),
});
