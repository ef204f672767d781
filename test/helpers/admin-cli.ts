// The operator CLI (infra/admin.ts) run as a child process, the way an operator runs it.
import { spawn } from 'node:child_process';
import { ROOT } from './env.ts';

export interface CliResult { code: number | null; stdout: string; stderr: string }

/** Runs `npm run --silent admin -- <args>` as a child process with a test file's environment. `direct` runs the
 *  command that script runs (node --no-warnings --import tsx infra/admin.ts) without npm's start-up time. */
export function runAdmin(env: Record<string, string>, args: string[], o: { direct?: boolean } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const [cmd, argv] = o.direct
      ? [process.execPath, ['--no-warnings', '--import', 'tsx', 'infra/admin.ts', ...args]]
      : ['npm', ['run', '--silent', 'admin', '--', ...args]];
    const child = spawn(cmd, argv, {
      cwd: ROOT, env: { ...process.env, ...env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
