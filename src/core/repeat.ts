/**
 * Runs `step` (a bounded batch: it moves or deletes at most so many, and says how many) until it
 * does nothing; the total. Keeps each storage call short however large the backlog.
 */
export async function repeatUntilZero(step: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let moved = await step(); moved > 0; moved = await step()) total += moved;
  return total;
}
