import { unsafeSelectorReason } from './ops.ts';

// A test's goal: what counts as a conversion on the page. Click and submit goals take a CSS selector (checked like op
// selectors); url_visit matches the page URL exactly, by substring, by prefix, or by a bounded regular expression.

export const GOAL_TYPES = ['form_submit', 'tel_click', 'cta_click', 'selector_click', 'url_visit'] as const;
export type GoalType = (typeof GOAL_TYPES)[number];
export const URL_MATCH_TYPES = ['exact', 'contains', 'prefix', 'regex'] as const;
export type UrlMatchType = (typeof URL_MATCH_TYPES)[number];

export interface Goal { type: GoalType; selector?: string; url_match_type?: UrlMatchType; url_pattern?: string }

export const MAX_URL_PATTERN_LENGTH = 500;
export const MAX_GOAL_REGEX_LENGTH = 200;

/** The selector a goal uses when none is given (form_submit and tel_click only). */
export const DEFAULT_GOAL_SELECTORS: Partial<Record<GoalType, string>> = { form_submit: 'form', tel_click: 'a[href^="tel:"]' };

/** Why a regex is refused: too long, invalid, or shaped for catastrophic backtracking (a quantified group that itself
 *  holds a quantifier, such as (a+)+ or (\w*)*, and backreferences). The tag matches it against a URL cut to 2000
 *  characters. */
export function regexReason(pattern: string): string | null {
  if (pattern.length > MAX_GOAL_REGEX_LENGTH) return `a regex must be at most ${MAX_GOAL_REGEX_LENGTH} characters`;
  try {
    new RegExp(pattern);
  } catch (err) {
    return `is not a valid regular expression (${(err as Error).message})`;
  }
  if (/\\[1-9]|\\k</.test(pattern)) return 'a regex must not use backreferences';
  if (/\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)\s*[+*{]/.test(pattern)) return 'a regex must not repeat a group that already repeats (catastrophic backtracking)';
  return null;
}

/** Field errors of a goal ({} when it is valid); `path` prefixes the field names. */
export function goalErrors(goal: Goal, path = 'goal'): Record<string, string> {
  const out: Record<string, string> = {};
  if (goal.type === 'url_visit') {
    if (goal.selector !== undefined) out[`${path}.selector`] = 'is not a field of a url_visit goal';
    if (!goal.url_match_type) out[`${path}.url_match_type`] = 'is required for url_visit';
    if (typeof goal.url_pattern !== 'string' || !goal.url_pattern) out[`${path}.url_pattern`] = 'is required for url_visit';
    else if (goal.url_pattern.length > MAX_URL_PATTERN_LENGTH) out[`${path}.url_pattern`] = `must be at most ${MAX_URL_PATTERN_LENGTH} characters`;
    else if (goal.url_match_type === 'regex') {
      const why = regexReason(goal.url_pattern);
      if (why) out[`${path}.url_pattern`] = why;
    }
    return out;
  }
  if (goal.url_match_type !== undefined) out[`${path}.url_match_type`] = `is not a field of a ${goal.type} goal`;
  if (goal.url_pattern !== undefined) out[`${path}.url_pattern`] = `is not a field of a ${goal.type} goal`;
  if (goal.selector === undefined) {
    if (!DEFAULT_GOAL_SELECTORS[goal.type]) out[`${path}.selector`] = `is required for ${goal.type}`;
  } else {
    const why = unsafeSelectorReason(goal.selector);
    if (why) out[`${path}.selector`] = why;
  }
  return out;
}

/** The goal as stored and served: defaults filled in. */
export function normalizeGoal(goal: Goal): Goal {
  if (goal.type === 'url_visit') return { type: goal.type, url_match_type: goal.url_match_type, url_pattern: goal.url_pattern };
  return { type: goal.type, selector: goal.selector ?? DEFAULT_GOAL_SELECTORS[goal.type] };
}
