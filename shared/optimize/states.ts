import { stateConflict } from '../errors.ts';

// A test's status and the moves between them (one place; the routes and the rollup call assertMove):
//
//   draft      created without start           → running (PATCH status=running), archived (DELETE)
//   running    serving variants, counting      → paused (PATCH status=paused), completed (the results rule decides
//                                                 winner or no_difference), shipped (POST ship), archived
//   paused     variants not served, not counted → running (PATCH status=running: resume), shipped, archived
//   completed  finished (winner_variant_id set  → shipped, archived
//              when the rule found a winner)
//   shipped    one variant made permanent: the  → archived
//              tag shows it to every visitor
//   archived   retired; results kept; a shipped (none)
//              variant stays shipped
//
// Events: created (on create), started (every move into running), completed / winner (into completed),
// shipped (into shipped). Pausing and archiving fire none.

export const TEST_STATUSES = ['draft', 'running', 'paused', 'completed', 'shipped', 'archived'] as const;
export type TestStatus = (typeof TEST_STATUSES)[number];

export const MOVES: Record<TestStatus, readonly TestStatus[]> = {
  draft: ['running', 'archived'],
  running: ['paused', 'completed', 'shipped', 'archived'],
  paused: ['running', 'shipped', 'archived'],
  completed: ['shipped', 'archived'],
  shipped: ['archived'],
  archived: [],
};

export const canMove = (from: TestStatus, to: TestStatus) => MOVES[from].includes(to);

/** state_conflict naming the current status when the move is not allowed. */
export function assertMove(from: TestStatus, to: TestStatus, action = `move to ${to}`): void {
  if (canMove(from, to)) return;
  throw stateConflict('optimize_test', from, `The test is ${from}; it cannot ${action}.`, {
    resolutionHint: MOVES[from].length ? `From ${from} a test can move to: ${MOVES[from].join(', ')}.` : 'An archived test cannot change.',
  });
}

/** Whether page_url and traffic_split may still change (not once the test finished). */
export const isEditable = (s: TestStatus) => s === 'draft' || s === 'running' || s === 'paused';
