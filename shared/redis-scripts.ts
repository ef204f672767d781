import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

// Lua scripts live in their own .lua files beside the module that uses them; this loads one and registers it
// as a custom ioredis command (EVALSHA with automatic fallback to EVAL).
export function defineScript(redis: Redis, name: string, url: URL, numberOfKeys: number): void {
  if ((redis as unknown as Record<string, unknown>)[name]) return;
  redis.defineCommand(name, { lua: readFileSync(url, 'utf8'), numberOfKeys });
}

export type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;
export const script = (redis: Redis, name: string) => (redis as unknown as Record<string, ScriptFn>)[name].bind(redis);
