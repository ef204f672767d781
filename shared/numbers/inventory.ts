import { randomInt } from 'node:crypto';
import type { Tx } from '../db.ts';

// The sandbox carrier's number inventory: +1 <area code> 555 <line>, 10,000 lines per area code. Fictional
// exchanges keep sandbox numbers from colliding with anyone's real phone.
export const SANDBOX_AREA_CODES = ['415', '212', '312', '206', '617', '512', '303', '404', '305', '702'];
export const SANDBOX_EXCHANGE = '555';

export const sandboxNumber = (areaCode: string, line: number) =>
  `+1${areaCode}${SANDBOX_EXCHANGE}${String(line).padStart(4, '0')}`;

export function isSandboxInventoryNumber(e164: string): boolean {
  return /^\+1[2-9]\d{2}555\d{4}$/.test(e164) && SANDBOX_AREA_CODES.includes(e164.slice(2, 5));
}

/** Up to `count` numbers of the area code that no organization holds now, starting at a random line. */
export async function availableSandboxNumbers(tx: Tx, areaCode: string, count: number): Promise<string[]> {
  const start = randomInt(0, 10_000);
  const candidates: string[] = [];
  for (let i = 0; i < Math.min(10_000, count * 4 + 16); i++) candidates.push(sandboxNumber(areaCode, (start + i) % 10_000));
  const held = new Set(
    (await tx.any(`SELECT phone_number FROM phone_numbers WHERE phone_number IN ($1:csv) AND status <> 'RELEASED'`,
      [candidates])).map((r) => r.phone_number as string),
  );
  return candidates.filter((n) => !held.has(n)).slice(0, count);
}
