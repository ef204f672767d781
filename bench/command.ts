import { spawn } from 'node:child_process';

/** Runs a command (wrk, say) to its end and resolves with its stdout and stderr; rejects when it exits non-zero. */
export function runCommand(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    c.stderr.on('data', (d) => { out += d; });
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited ${code}:\n${out}`))));
  });
}
