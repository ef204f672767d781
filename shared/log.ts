import { pino, type Logger } from 'pino';

// Structured JSON logs on stdout, one line per event; `proc` names the process that wrote it, `level` is usually
// Config.logLevel (LOG_LEVEL).
// Written synchronously: when the reader of stdout is gone (the `npm start` supervisor was killed, `| head` ended)
// a write fails at once with EPIPE and pino stops logging. With pino's default asynchronous stream a line still in
// flight at exit is retried forever by its exit flush (sonic-boom 4.2 loops on EPIPE), and the process never exits.
export function createLogger(proc: string, level: string): Logger {
  return pino({ level, base: { proc }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 1, sync: true }));
}
export type { Logger };
