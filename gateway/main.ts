import { loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/log.ts';
import { runProcess } from '../shared/process.ts';
import { startGateway } from './app.ts';

const config = loadConfig();
const log = createLogger('gateway', config.logLevel);
await runProcess(log, async () => {
  const g = await startGateway({ config, log });
  return { info: { url: g.url, metrics: g.metricsUrl }, stop: g.close };
});
