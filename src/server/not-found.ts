/**
 * The 404 of a job id or schedule key named in a path. An id with a `+` gets a hint: in a path a
 * `+` is a literal plus (RFC 3986), but form encoding (Java's `URLEncoder`, PHP's `urlencode`)
 * writes a space as `+`, so a client that used it asks for `a+b` when it meant `a b` and reads the
 * 404 as "already gone".
 */
import { HttpError } from './errors.js';

/** Longest id or key quoted in a message: the router takes up to 2,400 characters. */
const MAX_SHOWN = 200;

export function jobNotFound(queue: string, id: string): HttpError {
  return new HttpError('NOT_FOUND', `No job ${shown(id)} in queue ${queue} (never added, or completed or cancelled)${plusHint(id)}`);
}

export function scheduleNotFound(queue: string, key: string): HttpError {
  return new HttpError('NOT_FOUND', `No schedule ${shown(key)} in queue ${queue}${plusHint(key)}`);
}

function shown(text: string): string {
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}...` : text;
}

function plusHint(text: string): string {
  if (!text.includes('+')) return '';
  return ". A + in a path is a literal plus: if the id has a space, send it as %20 (RFC 3986 percent-encoding of a path segment; not form encoding such as Java's URLEncoder)";
}
