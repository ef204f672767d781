// mediasoup, loaded once with its worker binary set: mediasoup reads MEDIASOUP_WORKER_BIN when its module loads,
// so the variable must be set before the first import (a static `import 'mediasoup'` would be hoisted above it).
import { useCachedWorkerBinary } from '../shared/media/worker-binary.ts';

useCachedWorkerBinary();
export const mediasoup = await import('mediasoup');
