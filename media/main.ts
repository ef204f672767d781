import { loadConfig } from '../shared/config.ts';
import { startHealthServer } from '../shared/health-server.ts';
import { createLogger } from '../shared/log.ts';
import { runProcess } from '../shared/process.ts';

// Media will hold the mediasoup worker pool (browser transports, carrier RTP legs) with the browser-calling
// issue. Today it is a real process with a health endpoint and nothing to carry.
const config = loadConfig();
const log = createLogger('media', config.logLevel);
await runProcess(log, async () => {
  const health = await startHealthServer(config.host, config.mediaPort, async () => ({ proc: 'media', workers: 0 }));
  return { info: { health: `http://${config.host}:${health.port}/healthz` }, stop: health.close };
});
