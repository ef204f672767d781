// docs/benchmarks.md's table is generated from bench/results/*.json (bench/table.ts): the generator on sample
// results, the results writer (bench/report.ts), and that the committed page is what the committed results give.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeResult, type BenchResult } from '../../bench/report.ts';
import { DOC_PATH, END, HEAD_END, HEAD_START, RESULTS_PATH, START, readResults, regenerate, renderHeadline, renderTable } from '../../bench/table.ts';

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-table-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
const put = (dir: string, file: string, r: unknown) => writeFileSync(join(dir, file), JSON.stringify(r));

const older: BenchResult = {
  benchmark: 'gateway', measured_at: '2026-01-02T03:04:05Z', machine: { cores: 2, load_average: [0.5, 0.4, 0.3] },
  figures: [{ name: 'ratio (b)/(a)', value: 0.48, unit: '×', target: '>= 0.5', met: false }],
};
const newer: BenchResult = {
  benchmark: 'gateway', measured_at: '2026-03-04T00:00:00Z', machine: { cores: 4, load_average: '12–15' },
  figures: [
    { name: 'req/s | median', value: 93368, unit: 'req/s' },
    { name: 'worst p99', value: [2.2, 3.1], unit: 'ms', target: '< 10 ms', met: true },
  ],
  source: 'transcribed from README (test)',
};
const dial: BenchResult = {
  benchmark: 'dial', measured_at: '2026-02-01', machine: { cores: 2, load_average: null },
  figures: [{ name: 'accepted dials/s', value: 1100, unit: 'dials/s' }], note: 'quiet machine',
};

t.test('the table: one row per figure, benchmarks in order, newest sitting first, every column', async (t) => {
  const dir = tempDir();
  put(dir, 'gateway.old.json', older);
  put(dir, 'gateway.json', newer);
  put(dir, 'dial.json', dial);
  writeFileSync(join(dir, 'notes.txt'), 'not a result');
  const md = renderTable(readResults(dir));
  const lines = md.split('\n');
  t.equal(lines[0], START);
  t.equal(lines[lines.length - 1], END);
  const rows = lines.filter((l) => l.startsWith('| `'));
  t.same(rows, [
    '| `dial` [1] | accepted dials/s | 1,100 dials/s |  |  | 2026-02-01 | — |',
    '| `gateway` [2] | req/s \\| median | 93,368 req/s |  |  | 2026-03-04 | 12–15 |',
    '| `gateway` [2] | worst p99 | 2.2–3.1 ms | < 10 ms | yes | 2026-03-04 | 12–15 |',
    '| `gateway` [3] | ratio (b)/(a) | 0.48 × | >= 0.5 | **no** | 2026-01-02 | 0.5 |',
  ]);
  t.ok(lines.includes('| benchmark | figure | value | target | met | measured at | load |'), 'header row');
  t.ok(lines.includes('1. `bench/results/dial.json`; 2 cores; quiet machine.'), 'footnote with the note');
  t.ok(lines.includes('2. `bench/results/gateway.json`; 4 cores; transcribed from README (test).'), 'footnote with the source');
  t.ok(lines.includes('3. `bench/results/gateway.old.json`; 2 cores.'));
});

t.test('regenerate replaces only the block between the markers', async (t) => {
  const dir = tempDir();
  put(dir, 'dial.json', dial);
  const doc = `# Title\n\nprose before\n\n${START}\nstale | table\n${END}\n\nprose after\n`;
  const next = regenerate(doc, dir);
  t.ok(next.startsWith('# Title\n\nprose before\n\n' + START));
  t.ok(next.endsWith(END + '\n\nprose after\n'));
  t.notMatch(next, /stale/);
  t.match(next, /\| `dial` \[1\] \| accepted dials\/s \| 1,100 dials\/s/);
  t.equal(regenerate(next, dir), next, 'idempotent');
  t.throws(() => regenerate('# no markers\n', dir), /markers/);
});

t.test('the headline table: one row per figure with a target, from its newest sitting', async (t) => {
  const dir = tempDir();
  put(dir, 'gateway.old.json', older);
  put(dir, 'gateway.json', { ...newer, source: undefined, figures: [...newer.figures, { name: 'ratio (b)/(a)', value: 0.52, unit: '×', target: '>= 0.5', met: true }] });
  put(dir, 'dial.json', dial);
  const rows = renderHeadline(readResults(dir)).split('\n').filter((l) => l.startsWith('| `'));
  t.same(rows, [
    '| `gateway` | worst p99 < 10 ms | 2.2–3.1 ms | yes | 2026-03-04 |',
    '| `gateway` | ratio (b)/(a) >= 0.5 | 0.52 × | yes | 2026-03-04 |',
  ], 'figures without a target are left out; the older sitting of the same figure is not repeated');
  put(dir, 'gateway.json', newer);
  const transcribed = renderHeadline(readResults(dir)).split('\n').filter((l) => l.startsWith('| `'));
  t.same(transcribed, ['| `gateway` | ratio (b)/(a) >= 0.5 | 0.48 × | **no** | 2026-01-02 |'],
    'a transcribed sitting (source) is history, not a headline: the newest run written by a bench wins');
  const doc = `# T\n\n${HEAD_START}\nold\n${HEAD_END}\n\n${START}\nstale\n${END}\n`;
  const next = regenerate(doc, dir);
  t.notMatch(next, /\nold\n/, 'the headline block is regenerated');
  t.ok(next.indexOf(HEAD_END) < next.indexOf(START), 'and stays above the full table');
  t.equal(regenerate(next, dir), next, 'idempotent');
});

t.test('malformed results are refused, naming the file', async (t) => {
  for (const [what, bad] of [
    ['no figures', { ...dial, figures: [] }],
    ['a bad date', { ...dial, measured_at: 'yesterday' }],
    ['a string value', { ...dial, figures: [{ name: 'x', value: '1,100', unit: 'dials/s' }] }],
    ['a null value', { ...dial, figures: [{ name: 'x', value: null, unit: 'dials/s' }] }],
    ['a one-ended range', { ...dial, figures: [{ name: 'x', value: [1], unit: 'dials/s' }] }],
  ] as const) {
    const dir = tempDir();
    put(dir, 'broken.json', bad);
    t.throws(() => readResults(dir), /broken\.json/, what);
  }
});

t.test('writeResult writes what the table reads, leaving out figures that were not measured', async (t) => {
  const dir = tempDir();
  const path = writeResult('sample', [
    { name: 'rate', value: 12.5, unit: '/s', target: '>= 10/s', met: true },
    { name: 'no samples', value: NaN, unit: 'ms' },
  ], { dir, note: 'a note' });
  t.equal(path, join(dir, 'sample.json'));
  const r = JSON.parse(readFileSync(path, 'utf8')) as BenchResult;
  t.equal(r.benchmark, 'sample');
  t.ok(Date.now() - Date.parse(r.measured_at) < 60_000, 'measured_at is now');
  t.equal(r.machine.load_average && (r.machine.load_average as number[]).length, 3, 'os.loadavg()');
  t.ok(r.machine.cores >= 1);
  t.same(r.figures, [{ name: 'rate', value: 12.5, unit: '/s', target: '>= 10/s', met: true }]);
  t.match(renderTable(readResults(dir)), '| `sample` [1] | rate | 12.5 /s | >= 10/s | yes |');
});

t.test('docs/benchmarks.md is up to date with bench/results (npm run bench:table)', async (t) => {
  const doc = readFileSync(DOC_PATH, 'utf8');
  t.equal(regenerate(doc, RESULTS_PATH), doc, 'run `npm run bench:table` and commit docs/benchmarks.md with bench/results');
  t.ok(doc.indexOf(HEAD_START) >= 0 && doc.indexOf(HEAD_START) < doc.indexOf(START), 'the page opens with the headline table');
  const results = readResults(RESULTS_PATH);
  t.ok(results.length > 0, 'there are results');
  for (const name of ['gateway', 'dial', 'webhooks', 'media', 'signaling']) {
    t.ok(results.some(({ result }) => result.benchmark === name), `a result for bench:${name}`);
  }
});
