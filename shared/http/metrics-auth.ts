// Who may read a process's /metrics: anyone who reaches its port when METRICS_TOKEN is unset, otherwise only a
// request with `Authorization: Bearer <METRICS_TOKEN>` (Prometheus: `authorization: {credentials: ...}`).
import { timingSafeEqual } from 'node:crypto';
import { errorBody } from './envelope.ts';

export function metricsAuthorized(token: string | null, authorization: string | undefined): boolean {
  if (token === null) return true;
  const expected = Buffer.from(`Bearer ${token}`);
  const given = Buffer.from(authorization ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The 401 answered without the token: the error envelope's shape, and the challenge. */
export const METRICS_UNAUTHORIZED = {
  status: 401,
  headers: { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="metrics"' },
  body: JSON.stringify(errorBody({ code: 'unauthorized', message: '/metrics needs Authorization: Bearer <METRICS_TOKEN>' })),
};
