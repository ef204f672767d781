export const dateTime = (iso: string | null | undefined): string =>
  iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' }) : '—';

export const money = (cents: number): string => `$${(cents / 100).toFixed(2)}`;

export const seconds = (s: number | null): string => (s === null ? 'unknown' : s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`);
