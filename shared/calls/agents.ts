// The agent an AI call speaks with: a saved agent (agents table, by id) or inline settings. The call keeps a copy,
// so editing or deleting the agent later does not change calls already placed.
import { DEFAULT_VOICE, findAgent, type Agent } from '../agents/agents.ts';
import type { Db } from '../db.ts';
import { validationError } from '../errors.ts';
import type { Principal } from '../accounts/principal.ts';
import { within } from '../sub-entities/limit.ts';
import type { AgentSettings } from './model.ts';

export const DEFAULT_AGENT_NAME = 'Assistant';

/** Settings given on the call itself: a greeting, the rest defaulted. */
export type InlineAgent = Pick<Agent, 'greeting'> & Partial<Agent>;

/** `principal`: the credential placing the call; one limited to a sub-entity may use only that sub-entity's agents. */
export async function resolveAgent(db: Db, principal: Principal, agentId: string | undefined, inline: InlineAgent | undefined): Promise<AgentSettings> {
  const organizationId = principal.organizationId;
  if (agentId !== undefined && inline !== undefined) {
    throw validationError({ agent: 'give either agent_id or agent, not both' });
  }
  if (inline) {
    return { id: null, name: inline.name ?? DEFAULT_AGENT_NAME, greeting: inline.greeting, prompt: inline.prompt ?? '',
      voice: inline.voice ?? DEFAULT_VOICE };
  }
  if (agentId === undefined) throw validationError({ agent_id: 'is required (or inline settings in agent)' });
  const row = await findAgent(db, organizationId, agentId);
  if (!row || !within(principal, row.sub_entity_id)) throw validationError({ agent_id: 'is not an agent of your organization' });
  return { id: row.id, name: row.name, greeting: row.greeting, prompt: row.prompt, voice: row.voice };
}
