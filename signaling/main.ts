import { loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/log.ts';
import { runProcess } from '../shared/process.ts';
import { startSignaling } from './start.ts';

const config = loadConfig();
const log = createLogger('signaling', config.logLevel);
await runProcess(log, () => startSignaling(config, log));
