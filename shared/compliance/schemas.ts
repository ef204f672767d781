// Response schema of the compliance policy, beside its view (policy.ts: policyView).
import { Type } from '@sinclair/typebox';
import { Nullable } from '../response-schemas.ts';
import { WEEKDAYS } from './timezone.ts';

export const WeekdaySchema = Type.Union(WEEKDAYS.map((d) => Type.Literal(d)), { description: 'A weekday: mon, tue, wed, thu, fri, sat or sun.' });
export const PolicyResponse = Type.Object({
  call_window: Type.Object({
    enabled: Type.Boolean({ description: 'Whether calls are limited to the window (off for a new organization).' }),
    start: Type.String({ description: 'Opening time, recipient\'s local time (HH:MM).' }),
    end: Type.String({ description: 'Closing time, recipient\'s local time (HH:MM, exclusive; 24:00 allowed).' }),
  }, { description: 'The calling window in the recipient\'s local time: the contact\'s timezone, else every zone of the number.' }),
  allowed_days: Type.Object({
    enabled: Type.Boolean({ description: 'Whether calls are limited to the days (off for a new organization).' }),
    days: Type.Array(WeekdaySchema, { description: 'Weekdays calls are allowed on, in the recipient\'s local time.' }),
  }, { description: 'The days calls are allowed on.' }),
  frequency: Type.Object({
    enabled: Type.Boolean({ description: 'Whether calls per number are limited (off for a new organization).' }),
    max_calls: Type.Integer({ description: 'At most this many calls to one number ...' }),
    period_hours: Type.Integer({ description: '... within any rolling period of this many hours.' }),
  }, { description: 'The most calls to one number in a rolling period (every placed call counts, answered or not).' }),
  consent_required: Type.Boolean({ description: 'Whether a call needs a live call consent of the number\'s contact (off for a new organization).' }),
  updated_at: Nullable(Type.String({ format: 'date-time' }), 'When the policy was last changed; null: never set (every rule off).'),
}, { description: 'The organization\'s call compliance policy. The Do-Not-Call list and opt-outs always apply.' });
