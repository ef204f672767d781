import type { Logger } from 'pino';

export interface PeriodicOptions {
  /** Delay before the first run (default 0: at once). */
  firstMs?: number;
  log: Logger;
}

/** Runs `fn` every `everyMs` after the previous run finished, never two at once. stop() cancels the next run and
 *  waits for the one in progress, so a stopping process never leaves a sweep half done behind it. A failed run is
 *  logged and the next one comes as usual. */
export function periodic(name: string, everyMs: number, fn: () => Promise<void>, o: PeriodicOptions): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    timer = null;
    running = fn()
      .catch((err) => o.log.warn({ err: (err as Error).message, service: name }, `${name} failed`))
      .finally(() => {
        if (!stopped) timer = setTimeout(run, everyMs);
      });
  };
  timer = setTimeout(run, o.firstMs ?? 0);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
