// Transcripts and their small analysis (sandbox carrier only). In the sandbox an AI call's agent speaks its greeting and a scripted
// exchange follows; a recorded bridge call gets a scripted two-person conversation. Turns are cut at the call's
// real talk time, so a call ended early has a shorter transcript. Stored on the call row when the call ends.
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

function scriptFor(c: CallRow): Turn[] {
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

const WORDS = /[a-z]{5,}/g;
const STOP = new Set(['thanks', 'there', 'which', 'about', 'hello', 'goodbye', 'letting', 'calling', 'great']);

/** The transcript of an ended call, or null when there is none: not answered by a person, or a bridge call that
 *  or browser call that was not recorded. */
export function buildTranscript(c: CallRow): StoredTranscript | null {
  // Only the sandbox scripts conversations; a real carrier's transcripts come from its media pipeline (not yet).
  if (c.carrier !== 'sandbox') return null;
  if (!c.picked_up || c.duration_seconds === null) return null;
  // Person-to-person calls (bridge, browser) have a transcript only when recorded; browser calls never are yet.
  if (c.type !== 'ai' && !c.record) return null;
  const talk = c.duration_seconds;
  const turns = scriptFor(c).filter((t) => t.offset_seconds <= talk);
  const counts = new Map<string, number>();
  for (const t of turns) for (const w of t.text.toLowerCase().match(WORDS) ?? []) if (!STOP.has(w)) counts.set(w, (counts.get(w) ?? 0) + 1);
  const keywords = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 5).map(([w]) => w);
  const complete = turns.length === scriptFor(c).length;
  return {
    language: 'en-US',
    turns,
    analysis: {
      summary: c.type === 'ai'
        ? `${c.agent!.name} reached the callee and ${complete ? 'delivered its message; the callee acknowledged and said goodbye' : 'was cut off before the exchange finished'}.`
        : `A ${talk}-second recorded conversation ${complete ? 'that ended with both parties agreeing' : 'that ended before the parties finished'}.`,
      sentiment: complete ? 'positive' : 'neutral',
      turn_count: turns.length,
      talk_seconds: talk,
      ended_by: c.disconnection_reason,
      keywords,
    },
  };
}
