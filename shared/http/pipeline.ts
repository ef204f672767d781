// The stage pipeline (Fastify's route.js + hooks): each route's list of stages is compiled once, when the route is
// registered, from a plan of stage factories; a factory that the route does not need answers undefined, so a public
// route has no authentication stage and a GET no idempotency stage. A request runs its route's compiled list in
// order. Stages are synchronous with an asynchronous escape: a stage returns nothing to go on at once, or a promise
// to go on when it settles, so a request whose stages all answer from memory awaits nothing until its handler.
import { Router, type Routable, type RouteMatch } from './router.ts';

/** One step of a request. `x` is the request's state (each stack has its own); a stage fails by throwing (or
 *  rejecting), which ends the list: the stack turns the error into its error envelope. */
export interface Stage<X> {
  readonly name: string;
  run(x: X): void | Promise<void>;
}

/** Builds a route's stage at registration, or undefined when the route needs no such stage. */
export type StagePlan<R, X> = (route: R) => Stage<X> | undefined;

/** Runs stages from `from` on: synchronously while they answer synchronously; a promise once one does not. */
export function runStages<X>(stages: readonly Stage<X>[], x: X, from = 0): void | Promise<void> {
  for (let i = from; i < stages.length; i++) {
    const pending = stages[i].run(x);
    if (pending === undefined) continue;
    // The last stage's promise is the list's: no extra turn for a handler at the end.
    if (i === stages.length - 1) return pending;
    return pending.then(() => runStages(stages, x, i + 1));
  }
}

/** A router whose routes carry their compiled stage lists. */
export class Pipeline<R extends Routable, X> {
  readonly router = new Router<R>();
  private readonly compiled = new Map<R, readonly Stage<X>[]>();

  constructor(private readonly plan: readonly StagePlan<R, X>[]) {}

  /** Registers a route and compiles its stages (once; never per request). */
  add(route: R): void {
    const stages: Stage<X>[] = [];
    for (const build of this.plan) {
      const stage = build(route);
      if (stage) stages.push(stage);
    }
    this.router.add(route);
    this.compiled.set(route, stages);
  }

  match(method: string, path: string): RouteMatch<R> | { allowed: string[] } | null {
    return this.router.match(method, path);
  }

  /** The compiled stages of a registered route. */
  stagesOf(route: R): readonly Stage<X>[] {
    return this.compiled.get(route)!;
  }

  /** The stage names of the route registered for method and path (the path as registered), for tests and docs. */
  stageNames(method: string, path: string): string[] | undefined {
    const route = this.router.routes.find((r) => r.method === method && r.path === path);
    return route && this.compiled.get(route)!.map((s) => s.name);
  }
}
