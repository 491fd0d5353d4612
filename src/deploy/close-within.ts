/**
 * Closes a queue, worker or client, but never waits on an unreachable Redis for long: the CLI's
 * process and a stopping service go on after `ms` whatever the close is doing.
 */
export async function closeWithin(item: { close(): Promise<unknown> }, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([item.close().catch(() => undefined), new Promise(resolve => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
