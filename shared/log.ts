import { pino, type Logger } from 'pino';

// Structured JSON logs on stdout, one line per event; `proc` names the process that wrote it.
export function createLogger(proc: string, level = process.env.LOG_LEVEL || 'info'): Logger {
  return pino({ level, base: { proc }, timestamp: pino.stdTimeFunctions.isoTime });
}
export type { Logger };
