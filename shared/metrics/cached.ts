/** A read shared by every caller for `ms` after it answered (and while it runs), so several Prometheus servers
 *  scraping the same process do not multiply its cost; a read that fails is not kept. A read slower than
 *  `timeoutMs` fails (a store that does not answer must not hold the scrape past Prometheus's own timeout). */
export function cachedRead<T>(ms: number, timeoutMs: number, read: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | null = null;
  return () => {
    const now = Date.now();
    if (last && now - last.at < ms) return last.value;
    const value = withTimeout(read(), timeoutMs);
    const entry = { at: now, value };
    last = entry;
    value.catch(() => { if (last === entry) last = null; });
    return value;
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then((v) => { clearTimeout(timer); resolve(v); }, (err) => { clearTimeout(timer); reject(err); });
  });
}
