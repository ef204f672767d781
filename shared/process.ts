import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Db } from './db.ts';
import type { TokenKeys } from './tokens/keys.ts';
import type { QueueRegistry } from './queues/registry.ts';
import type { Keyer } from './redis.ts';

/** What every process opens once at start (shared/services.ts) and hands to everything it runs. */
export interface ProcessDeps {
  config: Config;
  db: Db;
  /** In workers a BullMQ-compatible connection (maxRetriesPerRequest null). */
  redis: Redis;
  key: Keyer;
  log: Logger;
  /** The process's BullMQ queues, one per name (closed when the process stops). */
  queues: QueueRegistry;
  /** The keys of client tokens and room tokens, loaded once (shared/tokens/keys.ts). */
  tokenKeys: TokenKeys;
}

/** What a composition root (<proc>/start.ts) returns: what the ready line reports, and how to stop cleanly. */
export interface RunningProcess {
  info: Record<string, unknown>;
  stop(): Promise<void>;
}

/** Runs a long-lived process: logs one health line when ready, stops gracefully once on SIGTERM or SIGINT, or when
 *  the process that started it with an IPC channel (the `npm start` supervisor) is gone, even if it was SIGKILLed. */
export async function runProcess(log: Logger, start: () => Promise<RunningProcess>) {
  // Read before starting: a channel that closes while start() runs is gone (process.channel unset) afterwards.
  const supervised = Boolean(process.channel);
  let running: RunningProcess;
  try {
    running = await start();
  } catch (err) {
    log.fatal({ err }, 'failed to start');
    process.exit(1);
  }
  log.info({ ...running.info, pid: process.pid, status: 'ready' }, 'ready');
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => { log.warn('shutdown timed out; exiting'); process.exit(1); }, 10_000);
    force.unref();
    try {
      await running.stop();
    } catch (err) {
      log.error({ err }, 'error during shutdown');
    }
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  if (supervised) {
    process.once('disconnect', () => void stop('supervisor exited'));
    if (!process.connected) void stop('supervisor exited');
  }
}
