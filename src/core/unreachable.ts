/**
 * The words for "Redis cannot be reached", shared by the library's ConnectionError and the CLI's
 * message, so that a person meets one sentence whichever they use:
 * `Cannot reach Redis at <address>: <reason> (last error: <the client's last connection error>)`.
 */

/**
 * The message for a Redis that cannot be reached. `address` is shown as given (redact passwords
 * first: see redactUrl); `reason` is what gave up (see {@link givenUpReason}); `lastError` is the
 * client's last connection error, omitted when `reason` already contains it; `hint` follows it.
 */
export function cannotReachRedis(address: string, reason: string, lastError?: string, hint?: string): string {
  const last = lastError === undefined || reason.includes(lastError) ? '' : ` (last error: ${lastError}${hint ? `; ${hint}` : ''})`;
  return `Cannot reach Redis at ${address}: ${reason}${last}`;
}

/**
 * ioredis's words for a command dropped after its reconnect attempts ("Reached the max retries per
 * request limit (which is 10). Refer to "maxRetriesPerRequest" option for details.") in plain
 * words; any other message as it is.
 */
export function givenUpReason(message: string): string {
  return message.replace(/^Reached the max retries per request limit \(which is (\d+)\)\..*$/s, 'gave up after $1 connection attempts');
}
