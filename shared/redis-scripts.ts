import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

// Lua scripts live in their own .lua files beside the module that uses them; this loads one and registers it
// as a custom ioredis command (EVALSHA with automatic fallback to EVAL).
export function defineScript(redis: Redis, name: string, url: URL, numberOfKeys: number): void {
  if ((redis as unknown as Record<string, unknown>)[name]) return;
  redis.defineCommand(name, { lua: readFileSync(url, 'utf8'), numberOfKeys });
  // ioredis copies custom commands into a pipeline when it creates one. With auto-pipelining, a pipeline already
  // collecting this tick's commands would lack the new command, and calling it now would fail the whole batch (and
  // crash the process in ioredis's callback). Give the pending pipelines the command too.
  const client = redis as unknown as { _autoPipelines?: Map<string, Record<string, unknown> & { _shaToScript: Record<string, unknown> }>;
    scriptsSet: Record<string, { sha: string }> } & Record<string, unknown>;
  for (const pipeline of client._autoPipelines?.values() ?? []) {
    pipeline[name] = client[name];
    pipeline[`${name}Buffer`] = client[`${name}Buffer`];
    pipeline._shaToScript[client.scriptsSet[name].sha] = client.scriptsSet[name];
  }
}

export type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;
export const script = (redis: Redis, name: string) => (redis as unknown as Record<string, ScriptFn>)[name].bind(redis);
