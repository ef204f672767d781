import type tap from 'tap';

/** The type of a subtest's `t`. */
export type TapTest = Parameters<Parameters<typeof tap.test>[0]>[0];

/** Runs `fn` over `items` with at most `n` in flight; results in input order. */
export async function pool<T, R>(items: T[], n: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}
