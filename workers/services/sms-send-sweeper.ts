import { enqueueSend, sendQueue, staleQueued } from '../../shared/sms/messages.ts';
import type { Service } from '../processor.ts';

// The gateway enqueues a message's send job right after its row commits; if it died in between (or Redis refused
// the add), the message would stay queued. This sweep re-enqueues queued messages older than a minute; a message
// whose job still exists (waiting for its number's slot) is untouched, since the job id is the message id.
export const smsSendSweeper: Service = {
  name: 'sms-send-sweeper',
  async start(deps) {
    const every = 30_000;
    const sweep = async () => {
      try {
        await enqueueSend(sendQueue(deps.redis, deps.config.redisPrefix), await staleQueued(deps.db, 60_000));
      } catch (err) {
        deps.log.warn({ err: (err as Error).message }, 'sms send sweep failed');
      }
    };
    const timer = setInterval(() => void sweep(), every);
    return { stop: async () => { clearInterval(timer); } };
  },
};
