// The caller name (CNAM) rules: what a display name may be before it is sent to a CNAM provider. The US CNAM
// databases store at most 15 characters; the accepted character set is the common subset carriers take.

export const CNAM_MAX_LENGTH = 15;
/** Letters, digits, space and these punctuation marks. */
export const CNAM_PUNCTUATION = "&.,'-";
const ALLOWED = /^[A-Za-z0-9 &.,'-]+$/;

/** Why `name` is not a valid CNAM display name, or null when it is. */
export function cnamNameProblem(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  if (name.length > CNAM_MAX_LENGTH) return `must be at most ${CNAM_MAX_LENGTH} characters (got ${name.length})`;
  if (!ALLOWED.test(name)) {
    const bad = [...new Set(name.replace(/[A-Za-z0-9 &.,'-]/g, ''))].join('');
    return `may contain only letters, digits, spaces and ${CNAM_PUNCTUATION.split('').join(' ')} (not ${JSON.stringify(bad)})`;
  }
  if (name !== name.trim()) return 'must not start or end with a space';
  if (name.includes('  ')) return 'must not contain two spaces in a row';
  if (!/[A-Za-z0-9]/.test(name)) return 'must contain a letter or a digit';
  return null;
}
