import { Worker } from 'bullmq';
import { loadConfig } from '../shared/config.ts';
import { createDb } from '../shared/db.ts';
import { startHealthServer } from '../shared/health-server.ts';
import { storeReadiness } from '../shared/readiness.ts';
import { createLogger } from '../shared/log.ts';
import { runProcess } from '../shared/process.ts';
import { createRedis, keyer } from '../shared/redis.ts';
import { CallRuntime } from '../shared/calls/runtime.ts';
import { deliveryContext } from '../shared/webhooks/deliver.ts';
import { platformGauges } from '../shared/metrics/platform-gauges.ts';
import { renderProcessMetrics } from '../shared/metrics/process-metrics.ts';
import { countJobs, queueDepths } from '../shared/metrics/queues.ts';
import type { WorkerDeps } from './processor.ts';
import { PROCESSORS, SERVICES } from './registry.ts';

const config = loadConfig();
const log = createLogger('workers', config.logLevel);
await runProcess(log, async () => {
  const db = createDb(config.databaseUrl, config.databasePoolMax ?? 20, 'openline-workers');
  const redis = createRedis(config.redisUrl, { maxRetriesPerRequest: null });
  await Promise.all([db.one('SELECT 1'), redis.ping()]);
  const base = { config, db, redis, key: keyer(config.redisPrefix), log };
  const deps: WorkerDeps = { ...base, calls: new CallRuntime(base, true), webhooks: deliveryContext(db, config, log) };
  const workers = PROCESSORS.map((p) => {
    const w = new Worker(p.queue, (job, token) => p.process(job, deps, token), {
      ...(typeof p.workerOptions === 'function' ? p.workerOptions(config) : p.workerOptions),
      connection: redis.duplicate({ maxRetriesPerRequest: null }), prefix: config.redisPrefix,
      concurrency: typeof p.concurrency === 'function' ? p.concurrency(config) : p.concurrency,
    });
    w.on('failed', (job, err) => log.warn({ queue: p.queue, job: job?.id, err: err.message }, 'job failed'));
    countJobs(w, p.queue);
    return w;
  });
  const services = await Promise.all(SERVICES.map(async (s) => ({ name: s.name, handle: await s.start(deps) })));
  const depths = queueDepths(redis, config.redisPrefix, PROCESSORS.map((p) => p.queue));
  const sources = [...platformGauges(base), depths.source];
  const health = await startHealthServer(config.host, config.workersPort, async () => ({
    proc: 'workers', queues: PROCESSORS.map((p) => p.queue), services: services.map((s) => s.name),
  }), storeReadiness(db, redis), { token: config.metrics.token, render: () => renderProcessMetrics(sources, log) });
  return {
    info: { health: `http://${config.host}:${health.port}/healthz`, queues: PROCESSORS.map((p) => p.queue) },
    stop: async () => {
      await health.close();
      await Promise.all(workers.map((w) => w.close()));
      for (const s of services) await s.handle.stop();
      await depths.close();
      await redis.quit();
      await db.$pool.end();
    },
  };
});
