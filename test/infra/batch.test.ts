import t from 'tap';
import { TurnBatcher } from '../../shared/batch.ts';

t.test('requests of one event-loop turn run as one batch, answered in order', async (t) => {
  const runs: number[][] = [];
  const b = new TurnBatcher<number, string>(async (xs) => { runs.push(xs); return xs.map((x) => `r${x}`); });
  const first = await Promise.all([b.add(1), b.add(2), b.add(3)]);
  t.same(first, ['r1', 'r2', 'r3']);
  t.same(runs, [[1, 2, 3]], 'one run for the three');
  t.equal(await b.add(4), 'r4', 'alone, a request runs at the end of its turn');
  t.same(runs, [[1, 2, 3], [4]]);
});

t.test('a full batch runs at once; the rest waits for the turn', async (t) => {
  const runs: number[][] = [];
  const b = new TurnBatcher<number, number>(async (xs) => { runs.push(xs); return xs; }, 2);
  t.same(await Promise.all([1, 2, 3, 4, 5].map((x) => b.add(x))), [1, 2, 3, 4, 5]);
  t.same(runs, [[1, 2], [3, 4], [5]]);
});

t.test('a failed run rejects every request of its batch, and only those', async (t) => {
  let fail = true;
  const b = new TurnBatcher<number, number>(async (xs) => { if (fail) throw new Error('down'); return xs; });
  const batch = [b.add(1), b.add(2)];
  for (const p of batch) await t.rejects(p, /down/);
  fail = false;
  t.equal(await b.add(3), 3);
});
