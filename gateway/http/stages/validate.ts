// Validation (every route): the query string, path parameters and JSON body parsed and checked against the route's
// schemas, compiled here once at registration. Rules every route obeys (NUL, surrogates, undecodable path ids) are
// checked first; a query parameter on a route without a query schema is refused.
import type { StagePlan } from '../../../shared/http/pipeline.ts';
import { assertCleanText } from '../request-guards.ts';
import type { AnyRoute } from '../types.ts';
import { compileValidator } from '../validation.ts';
import { assertEmpty, isMultipart, parseBody, parseMultipart, parseQuery } from '../wire.ts';
import type { ApiRequest } from './state.ts';

export const validateStage: StagePlan<AnyRoute, ApiRequest> = (route) => {
  const body = route.body ? compileValidator(route.body, 'body') : undefined;
  const query = route.query ? compileValidator(route.query, 'query') : undefined;
  const params = route.params ? compileValidator(route.params, 'params') : undefined;
  const check = (x: ApiRequest) => {
    if (query) query(x.query); else assertEmpty(x.query, 'query');
    params?.(x.params);
    body?.(x.body);
  };
  return {
    name: 'validate',
    run(x) {
      x.query = parseQuery(x.inc.query);
      if (route.upload && isMultipart(x.inc.headers)) {
        // An upload: the form is parsed (asynchronously) into text fields, checked as the body, and file parts.
        assertCleanText(x.inc.query, x.query, x.params, x.undecodable, null, undefined);
        return parseMultipart(x.inc.headers, x.rawBody, x.tooBig).then((form) => {
          x.body = form.fields;
          x.files = form.files;
          check(x);
        });
      }
      x.body = parseBody(x.inc, x.rawBody, x.tooBig, !!body);
      assertCleanText(x.inc.query, x.query, x.params, x.undecodable, x.rawBody, x.body);
      check(x);
    },
  };
};
