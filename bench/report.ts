// The benches' machine-readable output: each bench script, besides what it prints, writes its figures to
// bench/results/<name>.json in this shape, and `npm run bench:table` (bench/table.ts) turns every file there into
// the one table of docs/benchmarks.md. Figures live in those files and that table only.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Figure {
  name: string;
  /** A measured number, or [low, high] when a result states a range over runs. */
  value: number | [number, number];
  unit: string;
  /** The target in words, e.g. ">= 1000" (compared by the bench, not by the table). */
  target?: string;
  met?: boolean;
}

export interface BenchResult {
  benchmark: string;
  /** ISO 8601 time (or date) of the measurement. */
  measured_at: string;
  /** load_average: os.loadavg() (1, 5, 15 min) at the end of the run, or a range in words for transcribed figures. */
  machine: { cores: number; load_average: number[] | string | null };
  figures: Figure[];
  /** Where the figures come from when they were not written by the bench itself. */
  source?: string;
  /** Conditions worth a line under the table (e.g. "the machine was shared"). */
  note?: string;
}

export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'results');

/** Writes bench/results/<name>.json (or <file>.json, or into dir) atomically and returns its path. Prints nothing. */
export function writeResult(name: string, figures: Figure[], opts: { note?: string; dir?: string; file?: string } = {}): string {
  const result: BenchResult = {
    benchmark: name,
    measured_at: new Date().toISOString(),
    machine: { cores: availableParallelism(), load_average: loadavg().map((l) => Math.round(l * 100) / 100) },
    // A figure a run could not measure (NaN: no samples) is left out rather than written as null.
    figures: figures.filter((f) => (Array.isArray(f.value) ? f.value : [f.value]).every(Number.isFinite)),
    ...(opts.note ? { note: opts.note } : {}),
  };
  const dir = opts.dir ?? RESULTS_DIR;
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${opts.file ?? name}.json`);
  writeFileSync(`${path}.tmp`, JSON.stringify(result, null, 2) + '\n');
  renameSync(`${path}.tmp`, path);
  return path;
}

/** Rounds a measured figure for the JSON (to `digits` decimals, 2 by default). */
export const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;
