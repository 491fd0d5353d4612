/**
 * A Redis URL fit for messages and logs: the password is replaced by `***` (and a trailing `/`
 * dropped). The one place that decides how a URL with credentials is shown, for the CLI's messages,
 * the service's log lines and the library's connection errors.
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    // Not parsable: no part of it can be shown safely.
    return '(an invalid URL)';
  }
}
