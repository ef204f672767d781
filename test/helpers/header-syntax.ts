// Strict parsers for the header syntaxes the API contract names, so tests check the syntax itself and not just a
// substring: RFC 8941 structured-field Lists (RateLimit, RateLimit-Policy), RFC 7235 challenges (WWW-Authenticate).

export type BareItem = number | string | boolean | { token: string } | { bytes: string } | { date: number };
export interface SfItem { value: BareItem; params: Record<string, BareItem> }

/** Parses an RFC 8941 / RFC 9651 List whose members are Items (inner lists are rejected); throws on any syntax error. */
export function parseSfList(input: string): SfItem[] {
  let s = input.replace(/^[ \t]+|[ \t]+$/g, '');
  let i = 0;
  const fail = (why: string): never => { throw new Error(`invalid structured field (${why}) at ${i}: ${input}`); };
  const bare = (): BareItem => {
    const c = s[i];
    if (c === '"') {
      let out = '';
      i++;
      for (;;) {
        if (i >= s.length) fail('unterminated string');
        const ch = s[i++];
        if (ch === '\\') {
          const nx = s[i++];
          if (nx !== '"' && nx !== '\\') fail('bad escape');
          out += nx;
        } else if (ch === '"') {
          return out;
        } else {
          const code = ch.charCodeAt(0);
          if (code < 0x20 || code > 0x7e) fail('non-printable in string');
          out += ch;
        }
      }
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      const m = /^-?\d+(\.\d+)?/.exec(s.slice(i));
      if (!m) return fail('bad number');
      const intDigits = m[0].replace(/^-/, '').split('.')[0];
      if (m[1] ? intDigits.length > 12 || m[1].length > 4 : intDigits.length > 15) fail('number too long');
      i += m[0].length;
      return Number(m[0]);
    }
    if (c === '@') {
      // sf-date (RFC 9651): "@" followed by an sf-integer of seconds since the epoch.
      const m = /^@(-?\d{1,15})(?![.\d])/.exec(s.slice(i));
      if (!m) return fail('bad date');
      i += m[0].length;
      return { date: Number(m[1]) };
    }
    if (c === '?') {
      const b = s[i + 1];
      if (b !== '0' && b !== '1') fail('bad boolean');
      i += 2;
      return b === '1';
    }
    if (c === ':') {
      const m = /^:([A-Za-z0-9+/=]*):/.exec(s.slice(i));
      if (!m) return fail('bad byte sequence');
      i += m[0].length;
      return { bytes: m[1] };
    }
    const m = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/.exec(s.slice(i));
    if (!m) return fail('bad bare item');
    i += m[0].length;
    return { token: m[0] };
  };
  const params = (): Record<string, BareItem> => {
    const out: Record<string, BareItem> = {};
    while (s[i] === ';') {
      i++;
      while (s[i] === ' ') i++;
      const m = /^[a-z*][a-z0-9_\-.*]*/.exec(s.slice(i));
      if (!m) fail('bad parameter key');
      i += m![0].length;
      if (s[i] === '=') { i++; out[m![0]] = bare(); } else out[m![0]] = true;
    }
    return out;
  };
  const items: SfItem[] = [];
  if (!s.length) return items;
  for (;;) {
    if (s[i] === '(') fail('inner lists not expected');
    const value = bare();
    items.push({ value, params: params() });
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (i >= s.length) return items;
    if (s[i] !== ',') fail('expected comma');
    i++;
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (i >= s.length) fail('trailing comma');
  }
}

/** Parses one RFC 7235 challenge: `Scheme param="v", param=token`. */
export function parseChallenge(header: string): { scheme: string; params: Record<string, string> } {
  const m = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+)(?:\s+(.*))?$/.exec(header.trim());
  if (!m) throw new Error(`not a challenge: ${header}`);
  const params: Record<string, string> = {};
  let rest = m[2] ?? '';
  const re = /^\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([!#$%&'*+\-.^_`|~0-9A-Za-z]+))\s*(,|$)/;
  while (rest.length) {
    const p = re.exec(rest);
    if (!p) throw new Error(`bad auth-param list: ${header}`);
    const name = p[1].toLowerCase();
    if (name in params) throw new Error(`duplicate auth-param ${name}: ${header}`);
    params[name] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : p[3];
    rest = rest.slice(p[0].length);
  }
  return { scheme: m[1], params };
}
