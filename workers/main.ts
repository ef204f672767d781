import { loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/log.ts';
import { runProcess } from '../shared/process.ts';
import { startWorkers } from './start.ts';

const config = loadConfig();
const log = createLogger('workers', config.logLevel);
await runProcess(log, () => startWorkers(config, log));
