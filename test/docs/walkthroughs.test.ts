// The "Walkthrough with curl" sections of docs/reference/caller-trust.md and optimize.md, run as written: every sh
// block goes through bash and the real curl against this file's gateway (and spawned workers), and the json block
// that follows it is the documented, abridged answer: it must match the real one. So a doc edit that breaks a
// command, a body or an answer fails here.
//
// Matching (documented vs real answer): objects match on the documented keys only (abridged = keys left out);
// arrays element by element with the same length; a string "<name>" (alone or inside a string) matches anything and
// binds name, later "<name>" in commands and answers mean that value; "…" inside a string matches any text; a
// timestamp matches any timestamp, a day (YYYY-MM-DD) any day; everything else is equal. A block of GETs only (or of
// collector beacons) is repeated until its answer matches (the docs show the state a poll reaches: APPROVED, live,
// rolled up); anything else runs once. Every curl must answer 2xx. A block that runs `npm start` is the reader's
// terminal, not run here.
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assignVariant } from '../../shared/optimize/bucketing.ts';
import { pdfText } from '../caller-trust/helpers.ts';
import { ROOT, testEnv, type TestEnv } from '../helpers/env.ts';

const DOC_BASE = 'http://127.0.0.1:8080';
/** An RFC 3339 timestamp (the API answers ms and Z; a few JSON columns microseconds and +00:00). */
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
const DAY = /^\d{4}-\d\d-\d\d$/;
const PLACEHOLDER = /<([a-z][a-z0-9_]*)>/g;
const POLL_MS = 90_000;

interface Step { script: string; answer: unknown }

/** The sh blocks of a page's walkthrough section, each with the json block after it (undefined when none). */
async function walkthrough(page: string): Promise<Step[]> {
  const md = await readFile(join(ROOT, page), 'utf8');
  const start = md.indexOf('\n## Walkthrough with curl\n');
  if (start < 0) throw new Error(`${page}: no "## Walkthrough with curl" section`);
  const end = md.indexOf('\n## ', start + 1);
  const section = md.slice(start, end < 0 ? undefined : end);
  const steps: Step[] = [];
  for (const m of section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)) {
    if (m[1] === 'sh' && !/\bnpm start\b/.test(m[2])) steps.push({ script: m[2], answer: undefined });
    else if (m[1] === 'json' && steps.length && steps[steps.length - 1].answer === undefined) {
      try { steps[steps.length - 1].answer = JSON.parse(m[2]); } catch (e) { throw new Error(`${page}: a json block is not JSON: ${e}\n${m[2]}`); }
    }
  }
  return steps;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function matchString(doc: string, real: string, binds: Map<string, string>): boolean {
  const names: string[] = [];
  const re = doc.split(/(<[a-z][a-z0-9_]*>|…)/).map((part) => {
    if (part === '…') return '.*?';
    const name = /^<([a-z][a-z0-9_]*)>$/.exec(part)?.[1];
    if (!name) return escapeRe(part);
    if (binds.has(name)) return escapeRe(binds.get(name)!);
    if (names.includes(name)) return `\\${names.indexOf(name) + 1}`;
    names.push(name);
    return '(.+?)';
  }).join('');
  const m = new RegExp(`^${re}$`, 's').exec(real);
  if (!m) return false;
  names.forEach((n, i) => binds.set(n, m[i + 1]));
  return true;
}

/** Whether the documented (abridged) answer matches the real one; binds its placeholders into `binds`. */
function matches(doc: unknown, real: unknown, binds: Map<string, string>): boolean {
  if (typeof doc === 'string') {
    for (const when of [ISO, DAY]) if (when.test(doc)) return typeof real === 'string' && when.test(real);
    return typeof real === 'string' && matchString(doc, real, binds);
  }
  if (Array.isArray(doc)) return Array.isArray(real) && real.length === doc.length && doc.every((d, i) => matches(d, real[i], binds));
  if (doc && typeof doc === 'object') {
    if (!real || typeof real !== 'object' || Array.isArray(real)) return false;
    return Object.entries(doc).every(([k, v]) => Object.hasOwn(real, k) && matches(v, (real as Record<string, unknown>)[k], binds));
  }
  return doc === real;
}

interface Ran { statuses: number[]; last: unknown; stdout: string }

function bash(script: string, cwd: string): Promise<Ran> {
  // Each curl prints its status after its body, so bodies and statuses can be told apart.
  const full = `set -e\ncurl() { command curl -sS -w '\\n@@HTTP %{http_code}\\n' "$@"; }\n${script}`;
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', full], { cwd, env: { ...process.env, NODE_PATH: join(ROOT, 'node_modules') }, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`bash failed: ${err.message}\n${stderr}\n--- script ---\n${script}`));
        const parts = stdout.split(/\n@@HTTP (\d{3})\n/);
        const statuses = parts.filter((_, i) => i % 2 === 1).map(Number);
        const body = parts.length >= 3 ? parts[parts.length - 3] : '';
        let last: unknown;
        try { last = JSON.parse(body); } catch { last = body; }
        resolve({ statuses, last, stdout });
      });
  });
}

interface RunOptions {
  /** Initial shell variables (KEY, FROM: what npm start printed). */
  vars: Record<string, string>;
  /** Replaces a documented `export NAME=value` line's value (a value the reader makes up that the harness must choose). */
  override?: (name: string, binds: Map<string, string>) => Promise<string | undefined>;
}

/** Runs a page's walkthrough; answers the directory its commands ran in (the files they wrote). */
async function runWalkthrough(t: Test, env: TestEnv, page: string, o: RunOptions): Promise<string> {
  const steps = await walkthrough(page);
  t.ok(steps.length > 3, `${page}: the walkthrough has steps`);
  const cwd = await mkdtemp(join(tmpdir(), 'walkthrough-'));
  t.teardown(() => rm(cwd, { recursive: true, force: true }));
  const binds = new Map<string, string>();
  let prelude = Object.entries(o.vars).map(([k, v]) => `export ${k}='${v}'`).join('\n');
  for (const [i, step] of steps.entries()) {
    let script = step.script.replaceAll(DOC_BASE, env.url).replace(PLACEHOLDER, (whole, name: string) => {
      if (!binds.has(name)) throw new Error(`${page} step ${i + 1}: ${whole} is not bound by an earlier answer:\n${step.script}`);
      return binds.get(name)!;
    });
    for (const m of [...script.matchAll(/^export ([A-Z_][A-Z0-9_]*)=.*$/gm)]) {
      const value = await o.override?.(m[1], binds);
      if (value !== undefined) script = script.replace(m[0], `export ${m[1]}='${value}'`);
    }
    // GETs, and beacons (a beacon that counted nothing changed nothing: the collector sees a start within its 1 s cache).
    const retry = !/(^|\s)(-X|-d|--data\S*)\s/.test(script) || script.includes('/v1/optimize/collect');
    const until = Date.now() + POLL_MS;
    for (;;) {
      const ran = await bash(`${prelude}\n${script}`, cwd);
      if (process.env.WALKTHROUGH_PRINT) console.error(`--- ${page} step ${i + 1}\n${script}\n>>>\n${ran.stdout.replaceAll(env.url, DOC_BASE)}`);
      const real = JSON.parse(JSON.stringify(ran.last).replaceAll(env.url, DOC_BASE));
      const attempt = new Map(binds);
      const ok = ran.statuses.every((s) => s >= 200 && s < 300)
        && (step.answer === undefined || (ran.statuses.length > 0 && matches(step.answer, real, attempt)));
      if (ok) {
        for (const [k, v] of attempt) binds.set(k, v);
        t.pass(`${page} step ${i + 1}: ${script.split('\n').find((l) => l.includes('curl')) ?? script.split('\n')[0]}`);
        break;
      }
      if (!retry || Date.now() > until) {
        t.fail(`${page} step ${i + 1} does not answer as documented`, {
          script, statuses: ran.statuses, documented: step.answer, real });
        return cwd;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    prelude += `\n${[...script.matchAll(/^export [A-Z_][A-Z0-9_]*=.*$/gm)].map((m) => m[0]).join('\n')}`;
  }
  return cwd;
}

// As the pages' npm start line: the operator the LOA names, the sandbox at a tenth of its times.
const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '0.1', PLATFORM_LEGAL_NAME: 'Example Telecom, Inc.',
  PLATFORM_LEGAL_ADDRESS: '100 Main Street, Suite 5, Austin, TX 78701, USA' } });
const workers = env.spawn('workers');
await workers.ready(60_000);

t.test('caller-trust.md: enterprise registration, LOA, vetting, rejection and re-sign, Branded Calling', async (t) => {
  const org = await env.bootstrap({ org: 'Walkthrough Dental', numbers: 1 });
  const dir = await runWalkthrough(t, env, 'docs/reference/caller-trust.md', { vars: { KEY: org.api_key, FROM: org.phone_numbers[0] } });
  // The downloads are what the page says: the letter to the operator, then signed with its audit trail.
  t.match(await pdfText(await readFile(join(dir, 'loa-unsigned.pdf'))), /Example Telecom, Inc\./);
  t.match(await pdfText(await readFile(join(dir, 'loa-signed.pdf'))), /Audit trail/);
  t.equal((await readFile(join(dir, 'logo-stored.png'))).subarray(1, 4).toString(), 'PNG');
});

t.test('optimize.md: property, snippet, test, beacons, conversion, results, pause and ship', async (t) => {
  const org = await env.bootstrap({ org: 'Walkthrough Store', numbers: 0 });
  await runWalkthrough(t, env, 'docs/reference/optimize.md', {
    vars: { KEY: org.api_key },
    // The page shows the visitor landing in the variant named "Call now"; which one a made-up id lands in depends on
    // the (random) test id, so the harness picks an id that lands there.
    override: async (name, binds) => {
      if (name !== 'VISITOR') return undefined;
      const test = (await env.request('GET', `/v1/optimize/tests/${binds.get('test_id')}`, { key: org.api_key })).body.data;
      const variants: { id: string; name: string; weight: number }[] = test.variants;
      for (let n = 0; n < 1000; n++) {
        const v = assignVariant(test.id, `walkthrough-visitor-${n}`, test.traffic_split, variants, test.hash_version);
        if (v?.name === 'Call now') return `walkthrough-visitor-${n}`;
      }
      throw new Error('no visitor id lands in "Call now"');
    },
  });
});
