// Batching of independent requests made in the same turn of the event loop: under load, many callers share one
// round trip (one statement, one commit, one Redis pipeline); alone, a request waits for nothing but the end of the
// current turn (setImmediate). The function given gets the items in order and answers one result per item.
export class TurnBatcher<I, O> {
  private pending: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;

  constructor(private readonly run: (items: I[]) => Promise<O[]>, private readonly maxBatch = 200) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.maxBatch) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush() {
    this.scheduled = false;
    const batch = this.pending;
    if (!batch.length) return;
    this.pending = [];
    this.run(batch.map((b) => b.item)).then(
      (out) => batch.forEach((b, i) => b.resolve(out[i])),
      (err) => batch.forEach((b) => b.reject(err)));
  }
}
