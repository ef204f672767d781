import { loadConfig } from '../shared/config.ts';
import { prepareDatabase } from './prepare.ts';

const { created, applied } = await prepareDatabase(loadConfig());
console.log(JSON.stringify({ database_created: created, applied }));
