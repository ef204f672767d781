// Real process facts from /proc, for tests of `npm start`: who is whose parent, and who is still running.
import { readFileSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { eventually, ROOT } from './env.ts';

/** Parent pid and state letter of a process; null when it does not exist. */
export function procStat(pid: number): { ppid: number; state: string } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ..." where comm may hold spaces and parentheses: split after the last ")".
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0], ppid: Number(rest[1]) };
  } catch {
    return null;
  }
}

/** Running: exists and is not a zombie (an exited child its parent, or init, has not reaped yet). */
export function running(pid: number): boolean {
  const s = procStat(pid);
  return s !== null && s.state !== 'Z';
}

export { freePorts } from './ports.ts';

/** Whether host:port can be bound now with a plain bind (fails while anyone, SO_REUSEPORT or not, listens there). */
export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

export const PROCS = ['gateway', 'signaling', 'media', 'workers'] as const;

/** A running `npm start` in its own process group, with every pid of the tree it started. */
export interface Platform {
  npm: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  pids: { npm: number; supervisor: number; gateway: number; signaling: number; media: number; workers: number; mediasoup: number[] };
  /** Every pid above, flattened. */
  all(): number[];
}

/** Spawns `npm start` with `env` (own ports, database, Redis prefix) as the leader of a new process group and waits
 *  until all four processes said ready. The caller must end the group (see killGroup). */
export async function startPlatform(env: NodeJS.ProcessEnv): Promise<Platform> {
  const npm = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  npm.stdout!.on('data', (d) => { out += d; });
  npm.stderr!.on('data', (d) => { out += d; });
  const exited = new Promise<number | null>((r) => npm.once('exit', (c) => r(c)));
  const ready: Record<string, any> = {};
  try {
    await eventually(async () => {
      for (const proc of PROCS) {
        const line = new RegExp(`^${proc}\\s+\\| (\\{.*"status":"ready".*\\})$`, 'm').exec(out);
        if (line) ready[proc] = JSON.parse(line[1]);
      }
      return PROCS.every((p) => ready[p]) && out.includes('gateway ready at');
    }, 90_000, 100);
  } catch (err) {
    killGroup(npm.pid!);
    throw new Error(`npm start did not come up: ${(err as Error).message}\n${out}`);
  }
  const supervisor = procStat(ready.gateway.pid)!.ppid;
  const pids = {
    npm: npm.pid!, supervisor, gateway: ready.gateway.pid, signaling: ready.signaling.pid, media: ready.media.pid,
    workers: ready.workers.pid, mediasoup: ready.media.workers as number[],
  };
  return {
    npm, exited, pids, output: () => out,
    all: () => [pids.npm, pids.supervisor, ...PROCS.map((p) => pids[p]), ...pids.mediasoup],
  };
}

/** SIGKILL to a whole process group (whatever the test left running, orphans included: they keep the group). */
export function killGroup(pgid: number): void {
  try { process.kill(-pgid, 'SIGKILL'); } catch { /* already gone */ }
}

/** Runs `npm start` in a process group of its own until it exits by itself (it should refuse, or fail at start);
 *  its output, exit code and run time. Whatever it left of its group is killed. */
export async function npmStartToExit(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; out: string; ms: number }> {
  const began = Date.now();
  const npm = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  npm.stdout!.on('data', (d) => { out += d; });
  npm.stderr!.on('data', (d) => { out += d; });
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    new Promise<number | null>((r) => npm.once('exit', (c) => r(c))),
    new Promise<'timeout'>((r) => { timer = setTimeout(() => r('timeout'), timeoutMs); }),
  ]);
  clearTimeout(timer);
  killGroup(npm.pid!);
  if (code === 'timeout') throw new Error(`npm start did not exit within ${timeoutMs / 1000} s:\n${out}`);
  return { code, out, ms: Date.now() - began };
}
