// The router every HTTP stack of the platform uses (the gateway's API, media's control API, the operations
// endpoints of signaling, workers and the gateway's admin port). Routes are anything with a method and an
// OpenAPI-style path (/v1/calls/{id}).

/** What the router needs of a route. */
export interface Routable { readonly method: string; readonly path: string }

interface Pattern<R> { route: R; re: RegExp; names: string[] }

/** A matched route and its decoded path parameters. */
export interface RouteMatch<R> { route: R; params: Record<string, string>; undecodable?: string[] }

/** Static paths by map lookup (path, then method: no per-request key is built); parameterised paths by compiled
 *  pattern, in registration order. */
export class Router<R extends Routable> {
  readonly routes: R[] = [];
  private readonly exact = new Map<string, Map<string, R>>();
  private readonly patterns: Pattern<R>[] = [];

  add(route: R): void {
    const id = `${route.method} ${route.path}`;
    if (this.routes.some((r) => `${r.method} ${r.path}` === id)) throw new Error(`duplicate route ${id}`);
    this.routes.push(route);
    if (!route.path.includes('{')) {
      let byMethod = this.exact.get(route.path);
      if (!byMethod) this.exact.set(route.path, (byMethod = new Map()));
      byMethod.set(route.method, route);
      return;
    }
    const names: string[] = [];
    const re = new RegExp('^' + route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&')
      .replace(/\{(\w+)\}/g, (_, n) => { names.push(n); return '([^/]+)'; }) + '$');
    this.patterns.push({ route, re, names });
  }

  /** The route and its decoded path parameters, or which methods the path allows (for 405), or nothing. The route is
   *  matched on the raw path; a parameter that does not decode is named in `undecodable` (kept raw in params) so the
   *  pipeline answers it on that route (400), never as another route's 405. */
  match(method: string, path: string): RouteMatch<R> | { allowed: string[] } | null {
    const byMethod = this.exact.get(path);
    const hit = byMethod?.get(method);
    if (hit) return { route: hit, params: {} };
    const allowed: string[] = byMethod ? [...byMethod.keys()] : [];
    for (const c of this.patterns) {
      const m = c.re.exec(path);
      if (!m) continue;
      if (c.route.method !== method) { allowed.push(c.route.method); continue; }
      const params: Record<string, string> = {};
      let undecodable: string[] | undefined;
      c.names.forEach((n, i) => {
        try {
          params[n] = decodeURIComponent(m[i + 1]);
        } catch {
          params[n] = m[i + 1];
          (undecodable ??= []).push(n);
        }
      });
      return undecodable ? { route: c.route, params, undecodable } : { route: c.route, params };
    }
    return allowed.length ? { allowed } : null;
  }
}
