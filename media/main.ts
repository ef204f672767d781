import { loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/log.ts';
import { runProcess } from '../shared/process.ts';
import { startMedia } from './start.ts';

const config = loadConfig();
const log = createLogger('media', config.logLevel);
await runProcess(log, () => startMedia(config, log));
