/**
 * The service's structured logger (pino, JSON lines; on a terminal readable lines, see
 * {@link prettyLine}). Credentials are redacted wherever they could appear in a logged object: the
 * Authorization header, tokens and webhook secrets.
 */
import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import type { Logger as LibraryLogger } from '../index.js';

/** Paths pino replaces with "[redacted]". */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'request.headers.authorization',
  'headers.authorization',
  'authorization',
  'token',
  'secret',
  '*.token',
  '*.secret',
  'config.token',
  'config.webhooks[*].secret',
];

/** How log lines are written: `json` (one pino JSON object a line) or `pretty` (for a person at a terminal). */
export type LogFormat = 'json' | 'pretty';

/**
 * A pino logger for the service; `destination` defaults to stdout. `format` defaults to `pretty`
 * when stdout is a terminal and `json` otherwise (a file, a pipe, a log collector).
 */
export function createLogger(options: { level?: LevelWithSilent; destination?: DestinationStream; format?: LogFormat } = {}): Logger {
  const settings = { name: 'sandglass', level: options.level ?? 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  const format = options.format ?? (process.stdout.isTTY ? 'pretty' : 'json');
  if (format === 'json') return options.destination ? pino(settings, options.destination) : pino(settings);
  // On a terminal, process.stdout writes synchronously: no line is lost when the process exits.
  const target = options.destination ?? process.stdout;
  return pino(
    settings,
    prettyDestination(line => void target.write(line)),
  );
}

/** A pino destination that writes each JSON line as {@link prettyLine} formats it. */
export function prettyDestination(write: (line: string) => void): DestinationStream {
  return {
    write(chunk: string) {
      // pino writes one JSON object per call, ending in a newline.
      for (const line of chunk.split('\n')) if (line !== '') write(`${prettyLine(line)}\n`);
    },
  };
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, or that the line's start already shows. */
const HIDDEN_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'v']);
/** At most this many fields follow the message: a line stays one line on a terminal. */
const MAX_FIELDS = 6;
const MAX_VALUE_LENGTH = 120;

/**
 * One pino JSON line for a person: `HH:MM:SS.mmm LEVEL message key=value ...` (local time; a few
 * fields, URLs and words as they are, other strings quoted). A line that is not pino JSON is
 * returned as it is.
 */
export function prettyLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  if (entry === null || typeof entry !== 'object') return json;
  const time = typeof entry.time === 'number' ? clock(new Date(entry.time)) : '--:--:--.---';
  const level = (LEVEL_NAMES[entry.level as number] ?? String(entry.level)).padEnd(5);
  const fields = Object.entries(entry)
    .filter(([key, value]) => !HIDDEN_FIELDS.has(key) && value !== undefined)
    .slice(0, MAX_FIELDS)
    .map(([key, value]) => `${key}=${fieldText(value)}`);
  const message = typeof entry.msg === 'string' ? entry.msg : '';
  return [time, level, message, ...fields].filter(part => part !== '').join(' ');
}

function clock(date: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

function fieldText(value: unknown): string {
  let text: string;
  if (Array.isArray(value) && value.length > 0 && value.every(item => typeof item === 'string')) value = value.join(', ');
  if (typeof value === 'string') text = /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  else text = JSON.stringify(value) ?? String(value);
  return text.length > MAX_VALUE_LENGTH ? `${text.slice(0, MAX_VALUE_LENGTH - 1)}…` : text;
}

/** The library's logger interface (queues, consumers, webhook workers) over a pino or fastify logger. */
export function toLibraryLogger(log: {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}): LibraryLogger {
  return {
    debug: message => log.debug(message),
    info: message => log.info(message),
    warn: message => log.warn(message),
    error: message => log.error(message),
  };
}
