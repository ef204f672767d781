// Page changes ("ops") a variant applies, and the one rule that keeps them from introducing script. Every op, the
// selectors of goals and every URL a test carries go through this module; a refusal names the field and why.
//
// The rule, checked on values after undoing the obfuscations a browser would undo (HTML entities, CSS escapes, CSS
// comments, ASCII whitespace and control characters anywhere, letter case):
//   - URLs (replaceHref, setAttribute href/src/..., redirect_url): relative, or http:, https:, mailto:, tel: only;
//   - attributes: an allow-list (no on* handler, no srcdoc, no style, no formaction, ...);
//   - styles: no url(, expression(, @import, image-set(, -moz-binding, behavior, javascript:, or CSS syntax ({ } ; \ < >);
//   - selectors: no type selector naming an element that carries script or styles (script, style, iframe, object,
//     embed, base, meta, link, template, noscript, svg, math, ...), no universal selector, no CSS syntax;
//   - setText sets text (textContent), never markup.
// The tag repeats the element check at run time and never touches those elements, whatever a selector matches.

export const OP_KINDS = ['setText', 'setAttribute', 'addClass', 'removeClass', 'setStyle', 'hide', 'replaceHref'] as const;
export type OpKind = (typeof OP_KINDS)[number];

export interface Op { op: OpKind; selector: string; value?: string; name?: string; property?: string }

/** Which fields each op takes besides op and selector. */
export const OP_FIELDS: Record<OpKind, ReadonlyArray<'value' | 'name' | 'property'>> = {
  setText: ['value'], setAttribute: ['name', 'value'], addClass: ['value'], removeClass: ['value'],
  setStyle: ['property', 'value'], hide: [], replaceHref: ['value'],
};

export const MAX_OPS_PER_VARIANT = 50;
export const MAX_SELECTOR_LENGTH = 300;
export const MAX_TEXT_LENGTH = 5000;
export const MAX_VALUE_LENGTH = 2000;

/** Elements the tag never changes: they run script, load documents or styles, or change how the page resolves URLs. */
export const FORBIDDEN_ELEMENTS = ['script', 'style', 'iframe', 'frame', 'frameset', 'object', 'embed', 'applet', 'base',
  'meta', 'link', 'template', 'noscript', 'svg', 'math', 'foreignobject', 'portal', 'xmp', 'noembed', 'noframes', 'param'];

/** Attributes setAttribute may set (any aria-* and data-* too). URL-valued ones are checked as URLs. */
const ALLOWED_ATTRIBUTES = new Set(['alt', 'title', 'placeholder', 'href', 'src', 'target', 'rel', 'class', 'id', 'value',
  'width', 'height', 'lang', 'dir', 'hidden', 'disabled', 'role', 'label', 'for', 'tabindex', 'name', 'type', 'download',
  'hreflang', 'loading', 'cite', 'poster', 'maxlength', 'minlength', 'required', 'checked', 'selected', 'colspan', 'rowspan']);
const URL_ATTRIBUTES = new Set(['href', 'src', 'cite', 'poster']);
const SAFE_SCHEMES = new Set(['http', 'https', 'mailto', 'tel']);

/** CSS properties setStyle may not set (they can run code or load things in some engines). */
const FORBIDDEN_STYLE_PROPERTIES = new Set(['behavior', '-moz-binding', 'binding']);
const FORBIDDEN_STYLE_TOKENS = ['url(', 'expression(', '@import', 'image(', 'image-set(', '-webkit-image-set(', 'cross-fade(',
  'element(', 'paint(', '-moz-binding', 'behavior', 'javascript:', 'vbscript:', 'data:'];

const NAMED_ENTITIES: Record<string, string> = {
  colon: ':', tab: '\t', newline: '\n', lpar: '(', rpar: ')', sol: '/', bsol: '\\', semi: ';', lt: '<', gt: '>',
  amp: '&', quot: '"', apos: "'", num: '#', period: '.', comma: ',', excl: '!', commat: '@', lbrace: '{', rbrace: '}',
  equals: '=', nbsp: ' ', percnt: '%', plus: '+', dollar: '$', ast: '*', lowbar: '_', hyphen: '-', dash: '-',
};

/** Undoes HTML character references (numeric and the named ones an attacker would use), repeatedly (&amp;colon;). */
export function decodeEntities(s: string): string {
  for (let i = 0; i < 5; i++) {
    const next = s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);?/gi, (m, ref: string) => {
      if (ref[0] === '#') {
        const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
        return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : '';
      }
      return NAMED_ENTITIES[ref.toLowerCase()] ?? m;
    });
    if (next === s) return s;
    s = next;
  }
  return s;
}

/** Undoes CSS escapes (\6a, \000075 and \j) and removes CSS comments. */
export function decodeCss(s: string): string {
  return s
    .replace(/\/\*[\s\S]*?(\*\/|$)/g, '')
    .replace(/\\([0-9a-f]{1,6})[ \t\n\r\f]?/gi, (_m, hex: string) => {
      const code = parseInt(hex, 16);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : '';
    })
    .replace(/\\(.)/g, '$1');
}

/** ASCII whitespace and C0/C1 control characters, which browsers strip or ignore inside URL schemes. */
const stripInvisible = (s: string) => s.replace(/[\u0000-\u0020\u007f-\u009f\u00ad\u200b-\u200f\u2028\u2029\ufeff]/g, '');

/** Why a URL is refused, or null when it is safe: relative, or an allowed scheme after the browser's normalisation. */
export function unsafeUrlReason(raw: string): string | null {
  const s = stripInvisible(decodeEntities(stripInvisible(raw))).toLowerCase();
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(s);
  if (scheme && !SAFE_SCHEMES.has(scheme[1])) return `the ${scheme[1]}: scheme is not allowed (only http, https, mailto, tel or a relative URL)`;
  // Backslashes and percent-encoded schemes are not schemes to a browser, but nobody needs them at the start of a link.
  if (/^[\\%]/.test(s)) return 'must not start with a backslash or a percent escape';
  return null;
}

/** Why a CSS selector is refused, or null. */
export function unsafeSelectorReason(selector: string): string | null {
  if (typeof selector !== 'string' || !selector.trim()) return 'is required';
  if (selector.length > MAX_SELECTOR_LENGTH) return `must be at most ${MAX_SELECTOR_LENGTH} characters`;
  if (/[\u0000-\u001f\u007f]/.test(selector)) return 'must not contain control characters';
  const s = decodeCss(decodeEntities(selector)).toLowerCase();
  if (/[{};<@`]/.test(s)) return 'must not contain { } ; < @ or backquotes';
  // Outside of quoted attribute values, a bare * selects every element, including scripts.
  const unquoted = s.replace(/"[^"]*"|'[^']*'/g, '""');
  if (unquoted.includes('*') && !/\[[^\]]*\*=/.test(unquoted)) return 'must not use the universal selector *';
  const m = new RegExp(`(^|[\\s>+~,(|])(${FORBIDDEN_ELEMENTS.join('|')})(?![\\w-])`).exec(unquoted);
  if (m) return `must not select <${m[2]}> elements (they carry script, styles or documents)`;
  return null;
}

function unsafeStyleReason(property: string, value: string): { field: 'property' | 'value'; reason: string } | null {
  const prop = decodeCss(decodeEntities(property)).trim().toLowerCase();
  if (!/^-?[a-z][a-z-]{0,63}$/.test(prop)) return { field: 'property', reason: 'must be a CSS property name (letters and hyphens)' };
  if (FORBIDDEN_STYLE_PROPERTIES.has(prop)) return { field: 'property', reason: `${prop} is not allowed (it can run code)` };
  const v = stripInvisible(decodeCss(decodeEntities(value))).toLowerCase();
  for (const token of FORBIDDEN_STYLE_TOKENS) {
    if (v.includes(token)) return { field: 'value', reason: `must not contain ${token} (styles may not load resources or run code)` };
  }
  if (/[{};\\<>]/.test(v)) return { field: 'value', reason: 'must not contain { } ; \\ < or >' };
  return null;
}

function unsafeAttributeReason(name: string, value: string): { field: 'name' | 'value'; reason: string } | null {
  const n = stripInvisible(decodeEntities(name)).toLowerCase();
  if (n.startsWith('on')) return { field: 'name', reason: 'event-handler (on*) attributes are not allowed' };
  if (!/^[a-z][a-z0-9-]{0,63}$/.test(n) || !(ALLOWED_ATTRIBUTES.has(n) || /^(aria|data)-[a-z0-9-]+$/.test(n))) {
    return { field: 'name', reason: `${name} is not an allowed attribute (srcdoc, style, formaction, on* and the like are refused)` };
  }
  if (URL_ATTRIBUTES.has(n)) {
    const why = unsafeUrlReason(value);
    if (why) return { field: 'value', reason: why };
  }
  if (/[<>]/.test(decodeEntities(value)) || /javascript:|vbscript:/.test(stripInvisible(decodeEntities(value)).toLowerCase())) {
    return { field: 'value', reason: 'must not contain markup or script URLs' };
  }
  return null;
}

/** Validates one variant's ops; returns a map of field path (e.g. "variants[1].ops[0].value") to reason. */
export function opErrors(ops: unknown, path: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(ops)) return { [path]: 'must be an array of ops' };
  if (ops.length > MAX_OPS_PER_VARIANT) out[path] = `must have at most ${MAX_OPS_PER_VARIANT} ops`;
  ops.forEach((raw, i) => {
    const at = `${path}[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) { out[at] = 'must be an object'; return; }
    const op = raw as Record<string, unknown>;
    if (typeof op.op !== 'string' || !(OP_KINDS as readonly string[]).includes(op.op)) {
      out[`${at}.op`] = `must be one of ${OP_KINDS.join(', ')}`;
      return;
    }
    const kind = op.op as OpKind;
    const wanted = OP_FIELDS[kind];
    for (const k of Object.keys(op)) {
      if (k !== 'op' && k !== 'selector' && !wanted.includes(k as never)) out[`${at}.${k}`] = `is not a field of ${kind}`;
    }
    for (const k of ['selector', ...wanted]) {
      if (typeof op[k] !== 'string') out[`${at}.${k}`] = `is required for ${kind} (a string)`;
    }
    if (Object.keys(out).some((k) => k.startsWith(at))) return;
    const selectorWhy = unsafeSelectorReason(op.selector as string);
    if (selectorWhy) out[`${at}.selector`] = `${kind}: selector ${selectorWhy}`;
    const value = op.value as string | undefined;
    if (value !== undefined && value.length > (kind === 'setText' ? MAX_TEXT_LENGTH : MAX_VALUE_LENGTH)) {
      out[`${at}.value`] = `${kind}: must be at most ${kind === 'setText' ? MAX_TEXT_LENGTH : MAX_VALUE_LENGTH} characters`;
      return;
    }
    switch (kind) {
      case 'setText': break; // text only: the tag sets textContent
      case 'addClass': case 'removeClass':
        if (!/^-?[A-Za-z_][A-Za-z0-9_-]{0,99}$/.test(value!)) out[`${at}.value`] = `${kind}: must be one class name`;
        break;
      case 'replaceHref': {
        const why = unsafeUrlReason(value!);
        if (why) out[`${at}.value`] = `replaceHref: ${why}`;
        break;
      }
      case 'setAttribute': {
        const bad = unsafeAttributeReason(op.name as string, value!);
        if (bad) out[`${at}.${bad.field}`] = `setAttribute: ${bad.reason}`;
        break;
      }
      case 'setStyle': {
        const bad = unsafeStyleReason(op.property as string, value!);
        if (bad) out[`${at}.${bad.field}`] = `setStyle: ${bad.reason}`;
        break;
      }
      case 'hide': break;
    }
  });
  return out;
}
