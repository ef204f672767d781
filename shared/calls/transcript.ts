// Transcripts and their small analysis (sandbox carrier only). In the sandbox an AI call's agent speaks its greeting and a scripted
// exchange follows; a recorded bridge call gets a scripted two-person conversation. Turns are cut at the call's
// real talk time, so a call ended early has a shorter transcript. Stored on the call row when the call ends.
import type { AgentBooking } from '../appointments/agent-booking.ts';
import type { CallRow } from './model.ts';

export interface Turn { speaker: 'agent' | 'caller' | 'callee'; text: string; offset_seconds: number }
export interface Analysis {
  summary: string;
  sentiment: 'positive' | 'neutral' | 'negative';
  turn_count: number;
  talk_seconds: number;
  ended_by: string | null;
  keywords: string[];
}
export interface StoredTranscript { language: string; turns: Turn[]; analysis: Analysis }

const firstSentence = (s: string) => (s.trim().match(/^[^.!?]*[.!?]?/)?.[0] ?? '').trim();

/** The sandbox booking script (test number ending 0009, shared/appointments/agent-booking.ts): the callee asks for an
 *  appointment, the agent offers the next free slot and books it on the callee's yes (at 6 s). */
function bookingScript(c: CallRow, b: AgentBooking): Turn[] {
  const a = c.agent!;
  const ask = { speaker: 'callee' as const, text: 'Hi. I would like to book an appointment, please.', offset_seconds: 2 };
  if (b.outcome === 'no_availability') {
    return [
      { speaker: 'agent', text: a.greeting || 'Hello!', offset_seconds: 0 }, ask,
      { speaker: 'agent', text: 'I am sorry, I have no open times to offer right now. Someone will call you back to find a time.', offset_seconds: 3 },
      { speaker: 'callee', text: 'Okay, thank you. Goodbye.', offset_seconds: 6 },
    ];
  }
  return [
    { speaker: 'agent', text: a.greeting || 'Hello!', offset_seconds: 0 }, ask,
    { speaker: 'agent', text: `Of course. The next time I have open is ${b.spoken}. Shall I book it for you?`, offset_seconds: 3 },
    { speaker: 'callee', text: 'Yes, please book it.', offset_seconds: 6 },
    { speaker: 'agent', text: `You are booked for ${b.spoken}. We will see you then. Goodbye!`, offset_seconds: 7 },
    { speaker: 'callee', text: 'Thank you. Goodbye.', offset_seconds: 9 },
  ];
}

function scriptFor(c: CallRow, booking: AgentBooking | null): Turn[] {
  if (booking && c.type === 'ai') return bookingScript(c, booking);
  if (c.type === 'ai') {
    const a = c.agent!;
    const purpose = firstSentence(a.prompt) || 'I am calling with a quick update on your account.';
    return [
      { speaker: 'agent', text: a.greeting || 'Hello!', offset_seconds: 0 },
      { speaker: 'callee', text: 'Hi, yes. Who is this?', offset_seconds: 3 },
      { speaker: 'agent', text: `This is ${a.name}. ${purpose}`, offset_seconds: 5 },
      { speaker: 'callee', text: 'Okay, thanks for letting me know. Goodbye.', offset_seconds: 8 },
      { speaker: 'agent', text: 'Thank you for your time. Goodbye!', offset_seconds: 9 },
    ];
  }
  return [
    { speaker: 'callee', text: 'Hello?', offset_seconds: 0 },
    { speaker: 'caller', text: 'Hi, this is a quick call about your appointment.', offset_seconds: 2 },
    { speaker: 'callee', text: 'Thanks, that works for me.', offset_seconds: 6 },
    { speaker: 'caller', text: 'Great, talk soon. Bye.', offset_seconds: 8 },
  ];
}

function summaryOf(c: CallRow, booking: AgentBooking | null, complete: boolean, talk: number): string {
  const name = c.agent?.name;
  if (booking?.outcome === 'booked') return `${name} booked an appointment for ${booking.spoken} (appointment ${booking.appointment.id}).`;
  if (booking?.outcome === 'no_availability') return `${name} had no open time to offer; the callee will be called back.`;
  if (booking?.outcome === 'offered') return `${name} offered ${booking.spoken} but the call ended before the callee accepted; nothing was booked.`;
  return c.type === 'ai'
    ? `${name} reached the callee and ${complete ? 'delivered its message; the callee acknowledged and said goodbye' : 'was cut off before the exchange finished'}.`
    : `A ${talk}-second recorded conversation ${complete ? 'that ended with both parties agreeing' : 'that ended before the parties finished'}.`;
}

const WORDS = /[a-z]{5,}/g;
const STOP = new Set(['thanks', 'there', 'which', 'about', 'hello', 'goodbye', 'letting', 'calling', 'great']);

/** The transcript of an ended call, or null when there is none: not answered by a person, or a bridge call that
 *  or browser call that was not recorded. */
export function buildTranscript(c: CallRow, booking: AgentBooking | null = null): StoredTranscript | null {
  // Only the sandbox scripts conversations; a real carrier's transcripts come from its media pipeline (not yet).
  if (c.carrier !== 'sandbox') return null;
  if (!c.picked_up || c.duration_seconds === null) return null;
  // Person-to-person calls (bridge, browser) have a transcript only when recorded; browser calls never are yet.
  if (c.type !== 'ai' && !c.record) return null;
  const talk = c.duration_seconds;
  const script = scriptFor(c, booking);
  const turns = script.filter((t) => t.offset_seconds <= talk);
  const counts = new Map<string, number>();
  for (const t of turns) for (const w of t.text.toLowerCase().match(WORDS) ?? []) if (!STOP.has(w)) counts.set(w, (counts.get(w) ?? 0) + 1);
  const keywords = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 5).map(([w]) => w);
  const complete = turns.length === script.length;
  return {
    language: 'en-US',
    turns,
    analysis: {
      summary: summaryOf(c, booking, complete, talk),
      sentiment: complete ? 'positive' : 'neutral',
      turn_count: turns.length,
      talk_seconds: talk,
      ended_by: c.disconnection_reason,
      keywords,
    },
  };
}
