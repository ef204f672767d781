// The workers' composition root: the process's services (shared/services.ts), what every processor and service is
// given (WorkerDeps: the call runtime with the configured carrier, webhook delivery, SMS sending), one BullMQ Worker
// per processor (registry.ts), the background services, and the health listener (WORKERS_PORT).
import { Worker } from 'bullmq';
import { createReputationProvider } from '../shared/caller-trust/reputation/settings.ts';
import { CallRuntime } from '../shared/calls/runtime.ts';
import type { Config } from '../shared/config.ts';
import { startHealthServer } from '../shared/http/health-server.ts';
import type { Logger } from '../shared/log.ts';
import { platformGauges } from '../shared/metrics/platform-gauges.ts';
import { renderProcessMetrics } from '../shared/metrics/process-metrics.ts';
import { countJobs, queueDepths } from '../shared/metrics/queues.ts';
import type { RunningProcess } from '../shared/process.ts';
import { storeReadiness } from '../shared/readiness.ts';
import { createServices } from '../shared/services.ts';
import { createSmsCarrier } from '../shared/sms/configured.ts';
import { NumberPacer } from '../shared/sms/throughput.ts';
import { SpendCharges } from '../shared/spend/charges.ts';
import { SpendAccounts } from '../shared/spend/spend-accounts.ts';
import { deliveryContext } from '../shared/webhooks/deliver.ts';
import { queuePrefix } from '../shared/redis.ts';
import type { WorkerDeps } from './processor.ts';
import { PROCESSORS, SERVICES } from './registry.ts';

export async function startWorkers(config: Config, log: Logger): Promise<RunningProcess> {
  // BullMQ needs maxRetriesPerRequest null on the connections its Workers block on (each Worker duplicates this one).
  const services = createServices(config, log, { name: 'workers', poolMax: 20, redis: { maxRetriesPerRequest: null } });
  const { db, redis } = services;
  const stops: (() => Promise<void>)[] = [() => services.close()];
  const stop = async () => { for (const s of stops.splice(0).reverse()) await s(); };
  try {
    await Promise.all([db.one('SELECT 1'), redis.ping()]);
    const deps: WorkerDeps = {
      ...services,
      calls: new CallRuntime(services, true),
      webhooks: deliveryContext(db, config, log),
      sms: {
        carrier: createSmsCarrier(services.queues, config),
        pacer: new NumberPacer(redis, services.key, config.sms.numberRatePerSecond),
        charges: new SpendCharges(db, new SpendAccounts(redis, services.key, db)),
      },
      reputation: createReputationProvider(db, config),
    };
    // Stopped after the Workers closed (stops run in reverse).
    const running: { name: string; handle: { stop(): Promise<void> } }[] = [];
    stops.push(async () => { for (const s of running.splice(0)) await s.handle.stop(); });
    // One connection per Worker; BullMQ leaves a connection it was handed open (shared), so it is quit after its Worker.
    const connections = PROCESSORS.map(() => redis.duplicate({ maxRetriesPerRequest: null }));
    const workers = PROCESSORS.map((p, i) => {
      const w = new Worker(p.queue, (job, token) => p.process(job, deps, token), {
        ...(typeof p.workerOptions === 'function' ? p.workerOptions(config) : p.workerOptions),
        connection: connections[i], prefix: queuePrefix(config),
        concurrency: typeof p.concurrency === 'function' ? p.concurrency(config) : p.concurrency,
      });
      w.on('failed', (job, err) => log.warn({ queue: p.queue, job: job?.id, err: err.message }, 'job failed'));
      // A Worker's connection error (Redis unreachable, a cluster's slots not readable) is logged as one JSON line;
      // without a listener BullMQ printed the bare stack to stderr.
      w.on('error', (err) => log.warn({ queue: p.queue, err }, 'queue worker: redis error'));
      countJobs(w, p.queue);
      return w;
    });
    stops.push(async () => {
      await Promise.all(workers.map((w) => w.close()));
      await Promise.all(connections.map((c) => c.quit().catch(() => c.disconnect())));
    });
    for (const s of SERVICES) running.push({ name: s.name, handle: await s.start(deps) });
    const sources = [...platformGauges(services), queueDepths(services.queues, PROCESSORS.map((p) => p.queue))];
    const health = await startHealthServer(config.host, config.workersPort, async () => ({
      proc: 'workers', queues: PROCESSORS.map((p) => p.queue), services: running.map((s) => s.name),
    }), storeReadiness(db, redis), { token: config.metrics.token, render: () => renderProcessMetrics(sources, log) });
    stops.push(() => health.close());
    return { info: { health: `http://${config.host}:${health.port}/healthz`, queues: PROCESSORS.map((p) => p.queue) }, stop };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
