import { pino, type Logger } from 'pino';

// Structured JSON logs on stdout, one line per event; `proc` names the process that wrote it, `level` is usually
// Config.logLevel (LOG_LEVEL).
export function createLogger(proc: string, level: string): Logger {
  return pino({ level, base: { proc }, timestamp: pino.stdTimeFunctions.isoTime });
}
export type { Logger };
