// How a JSON-schema (Ajv) error becomes an entry of an error's `fields`: the gateway's request validation and the
// media control API both answer 400 naming each bad field this way.
import type { ErrorObject } from 'ajv';

/** "/members/0/phone_id" -> "members[0].phone_id" */
export function fieldPath(pointer: string): string {
  return pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '');
}

/** [field, message] for one Ajv error. */
export function explainAjvError(e: ErrorObject): [string, string] {
  const at = fieldPath(e.instancePath);
  const join = (name: string) => (at ? `${at}.${name}` : name);
  switch (e.keyword) {
    case 'required': return [join((e.params as { missingProperty: string }).missingProperty), 'is required'];
    case 'additionalProperties': return [join((e.params as { additionalProperty: string }).additionalProperty), 'is not a recognized field'];
    case 'enum': return [at, `must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`];
    case 'const': return [at, `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`];
    case 'anyOf': return [at, 'does not match any allowed form'];
    default: return [at, e.message ?? 'is invalid'];
  }
}
