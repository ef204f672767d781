import type { Processor, Service } from './processor.ts';

// Every queue processor and background service of the workers process. Add one line per new file.
export const PROCESSORS: Processor<any>[] = [];
export const SERVICES: Service[] = [];
