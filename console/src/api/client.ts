// The typed API client: openapi-fetch over the types openapi-typescript generated from the gateway's own route
// definitions (infra/build-console.ts). Same origin, the session cookie goes along; writes carry X-CSRF-Token.
import createClient from 'openapi-fetch';
import type { paths } from './schema';

let csrfToken: string | null = null;

/** The csrf_token of the signed-in session (null after sign-out). */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

export const api = createClient<paths>({ baseUrl: window.location.origin, credentials: 'same-origin' });

api.use({
  onRequest({ request }) {
    if (request.method !== 'GET' && request.method !== 'HEAD' && csrfToken) request.headers.set('X-CSRF-Token', csrfToken);
    return request;
  },
});

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
export type Session = Json<paths['/v1/session']['get']['responses'][200]>['data'];
export type ApiKey = Json<paths['/v1/api-keys']['get']['responses'][200]>['data'][number];
export type NewApiKey = Json<paths['/v1/api-keys']['post']['responses'][201]>['data'];
export type Call = Json<paths['/v1/calls/{id}']['get']['responses'][200]>['data'];
export type CallsQuery = NonNullable<paths['/v1/calls']['get']['parameters']['query']>;
export type Transcript = Json<paths['/v1/calls/{id}/transcript']['get']['responses'][200]>['data'];
export type Member = Json<paths['/v1/members']['get']['responses'][200]>['data'][number];
export type Role = Member['role'];
export type PhoneNumber = Json<paths['/v1/phone-numbers']['get']['responses'][200]>['data'][number];
export type FleetItem = Json<paths['/v1/number-health/numbers']['get']['responses'][200]>['data'][number];
export type NumberSet = Json<paths['/v1/number-health/sets']['get']['responses'][200]>['data'][number];
export type AvailableNumber = Json<paths['/v1/phone-numbers/available']['get']['responses'][200]>['data'][number];
export type Subscription = Json<paths['/api/v1/webhook_subscriptions']['get']['responses'][200]>['data'][number];
export type CreatedSubscription = Json<paths['/api/v1/webhook_subscriptions']['post']['responses'][201]>['data'];
export type DeliveryAttempt = Json<paths['/api/v1/webhook_subscriptions/{id}/deliveries']['get']['responses'][200]>['data'][number];
export type Scope = NonNullable<paths['/v1/api-keys']['post']['requestBody']>['content']['application/json']['scopes'][number];

/** The error envelope's message, or a generic line for a failure without one (network down, a proxy's page). */
export function messageOf(error: unknown, response?: Response): string {
  const e = (error as { error?: { message?: string } } | undefined)?.error;
  if (e?.message) return e.message;
  return response ? `The server answered ${response.status}.` : 'The server could not be reached.';
}
