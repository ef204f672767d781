// Writing answers on uWS (the gateway's API and signaling's operations endpoints): status lines and headers.
import type uWS from 'uWebSockets.js';
import type { Logger } from '../log.ts';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 206: 'Partial Content', 304: 'Not Modified', 400: 'Bad Request', 401: 'Unauthorized',
  402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 413: 'Payload Too Large',
  416: 'Range Not Satisfiable', 422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway',
  503: 'Service Unavailable',
};
export const STATUS_LINE: Record<number, string> = Object.fromEntries(
  Object.entries(STATUS_TEXT).map(([code, text]) => [code, `${code} ${text}`]));

/** Writes a response's headers in one native call. uWS writes writeHeader(name, value) as "name: value\r\n" into
 *  the corked response, and every call costs a crossing into C++ plus a UTF-8 conversion of both strings, so the
 *  headers after the first ride in the first one's value as "\r\nName: value" lines (measured: ~7% more requests
 *  per second on GET /v1/account). Framing is only safe if no value carries CR or LF, which uWS itself never
 *  checks: such a header is dropped and logged instead of being written. */
export function writeHeaders(res: uWS.HttpResponse, headers: Record<string, string>, log: Logger): void {
  let first: string | null = null;
  let block = '';
  for (const name in headers) {
    const value = headers[name];
    if (value.indexOf('\r') !== -1 || value.indexOf('\n') !== -1 || name.indexOf('\r') !== -1 || name.indexOf('\n') !== -1) {
      log.error({ header: name }, 'header with CR or LF not sent');
      continue;
    }
    if (first === null) { first = name; block = value; } else block += '\r\n' + name + ': ' + value;
  }
  if (first !== null) res.writeHeader(first, block);
}

/** Status, headers and body in one corked write (nothing when the client went away). */
export function writeAnswer(res: uWS.HttpResponse, status: number, headers: Record<string, string>, body: string | Buffer, log: Logger): void {
  res.cork(() => {
    res.writeStatus(STATUS_LINE[status] ?? `${status} `);
    writeHeaders(res, headers, log);
    res.end(body);
  });
}
