import { loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/log.ts';
import { runProcess } from '../shared/process.ts';
import { startGateway } from './start.ts';

const config = loadConfig();
const log = createLogger('gateway', config.logLevel);
await runProcess(log, () => startGateway(config, log));
