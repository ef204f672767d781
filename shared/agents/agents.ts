import { writeWithin, type Db, type WithinTx } from '../db.ts';
import { notFound } from '../errors.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import { assertSubEntityOf } from '../sub-entities/sub-entities.ts';

// Voice agents: the configuration an AI outbound call (POST /v1/calls) speaks with. Deleting an agent keeps its
// row (deleted_at) so calls that used it still name it.

export const DEFAULT_VOICE = 'neutral';
export const DEFAULT_GREETING = 'Hello! This is an automated assistant calling. Do you have a moment?';

/** What an agent is: who speaks and how. Saved agents, the copy an AI call keeps and the carrier's AI leg share it. */
export interface Agent { name: string; greeting: string; prompt: string; voice: string }

export interface AgentRow extends Agent {
  id: string;
  organization_id: string;
  /** The sub-entity the agent belongs to (null: the organization's). */
  sub_entity_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A new saved agent: a name, the rest defaulted. */
export type AgentInput = Pick<Agent, 'name'> & Partial<Agent> & { sub_entity_id?: string | null };

export async function createAgent(db: Db, organizationId: string, a: AgentInput, within?: WithinTx<AgentRow>): Promise<AgentRow> {
  await assertSubEntityOf(db, organizationId, a.sub_entity_id);
  return writeWithin(db, within, (q) => q.one(
    `INSERT INTO agents (id, organization_id, name, greeting, prompt, voice, sub_entity_id) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [uuidv7(), organizationId, a.name, a.greeting ?? DEFAULT_GREETING, a.prompt ?? '', a.voice ?? DEFAULT_VOICE, a.sub_entity_id ?? null],
  ));
}

/** An agent of the organization that is not deleted, or null (another organization's agent included). */
export async function findAgent(db: Db, organizationId: string, id: string): Promise<AgentRow | null> {
  if (!isUuid(id)) return null;
  return db.oneOrNone('SELECT * FROM agents WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL', [id, organizationId]);
}

/** findAgent, or not_found. */
export async function getAgent(db: Db, organizationId: string, id: string): Promise<AgentRow> {
  const row = await findAgent(db, organizationId, id);
  if (!row) throw notFound(`Agent ${id}`);
  return row;
}

export async function updateAgent(db: Db, organizationId: string, id: string, patch: Partial<AgentInput>,
  within?: WithinTx<AgentRow>): Promise<AgentRow> {
  await getAgent(db, organizationId, id);
  await assertSubEntityOf(db, organizationId, patch.sub_entity_id);
  return writeWithin(db, within, async (q) => {
    const row = await q.oneOrNone<AgentRow>(
    `UPDATE agents SET name = COALESCE($3, name), greeting = COALESCE($4, greeting), prompt = COALESCE($5, prompt),
            voice = COALESCE($6, voice), sub_entity_id = CASE WHEN $7 THEN $8::uuid ELSE sub_entity_id END, updated_at = now()
      WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL RETURNING *`,
      [id, organizationId, patch.name ?? null, patch.greeting ?? null, patch.prompt ?? null, patch.voice ?? null,
        patch.sub_entity_id !== undefined, patch.sub_entity_id ?? null],
    );
    if (!row) throw notFound(`Agent ${id}`);
    return row;
  });
}

export async function deleteAgent(db: Db, organizationId: string, id: string, within?: WithinTx<void>): Promise<void> {
  await getAgent(db, organizationId, id);
  await writeWithin(db, within, async (q) => {
    await q.none('UPDATE agents SET deleted_at = now() WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL', [id, organizationId]);
  });
}

/** `f.sub_entity_id`: only the agents of that sub-entity (the list filter after limit.ts listFilter). */
export async function listAgents(db: Db, organizationId: string, p: PageParams, f: { sub_entity_id?: string } = {}): Promise<AgentRow[]> {
  const sub = f.sub_entity_id !== undefined;
  const k = keysetClause('id', p, sub ? 3 : 2);
  return db.any(`SELECT * FROM agents WHERE organization_id = $1 AND deleted_at IS NULL${sub ? ' AND sub_entity_id = $2::uuid' : ''}${k.where}${k.tail}`,
    [organizationId, ...(sub ? [f.sub_entity_id] : []), ...k.values]);
}
