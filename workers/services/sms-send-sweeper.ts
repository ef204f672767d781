import { enqueueSend, sendQueue, staleQueued } from '../../shared/sms/messages.ts';
import { periodic } from '../periodic.ts';
import type { Service } from '../processor.ts';

// The gateway enqueues a message's send job right after its row commits; if it died in between (or Redis refused
// the add), the message would stay queued. This sweep re-enqueues queued messages older than a minute; a message
// whose job still exists (waiting for its number's slot) is untouched, since the job id is the message id.
export const smsSendSweeper: Service = {
  name: 'sms-send-sweeper',
  async start(deps) {
    return periodic('sms send sweep', 30_000, async () => {
      await enqueueSend(sendQueue(deps.queues), await staleQueued(deps.db, 60_000));
    }, { firstMs: 30_000, log: deps.log });
  },
};
