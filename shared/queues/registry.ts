// The one place a process opens BullMQ queues: one Queue per name on the process's connection and Redis prefix,
// created on first use and closed together when the process stops (services.close()). Domain code asks for a queue
// by name (deps.queues.get(NAME)) and never builds or closes one itself.
import { FlowProducer, Queue } from 'bullmq';
import type { Redis } from '../redis.ts';

export class QueueRegistry {
  private readonly queues = new Map<string, Queue>();
  private flows: FlowProducer | null = null;
  private closed = false;

  /** connection: the process's Redis handle (BullMQ duplicates it only for blocking commands, which a Queue has none of). */
  constructor(readonly connection: Redis, readonly prefix: string) {}

  /** The Queue for `name`, the same object on every call. */
  get<T = unknown>(name: string): Queue<T> {
    if (this.closed) throw new Error(`queue registry closed: cannot open queue ${name}`);
    let q = this.queues.get(name);
    if (!q) this.queues.set(name, (q = new Queue(name, { connection: this.connection, prefix: this.prefix })));
    return q as Queue<T>;
  }

  /** The process's FlowProducer (adds jobs to several queues, or several jobs, in one Redis transaction). */
  flowProducer(): FlowProducer {
    if (this.closed) throw new Error('queue registry closed: cannot open a flow producer');
    return (this.flows ??= new FlowProducer({ connection: this.connection, prefix: this.prefix }));
  }

  /** Deletes a queue and everything in it (a dead process's own queue), and forgets it. */
  async obliterate(name: string): Promise<void> {
    const q = this.get(name);
    this.queues.delete(name);
    try { await q.obliterate({ force: true }); } finally { await q.close(); }
  }

  /** Names of the queues opened so far (for tests and diagnostics). */
  get opened(): string[] { return [...this.queues.keys()]; }

  /** Closes every queue (and the flow producer) it opened; later get() calls throw. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const all: Promise<unknown>[] = [...this.queues.values()].map((q) => q.close());
    if (this.flows) all.push(this.flows.close());
    await Promise.allSettled(all);
    this.queues.clear();
  }
}
