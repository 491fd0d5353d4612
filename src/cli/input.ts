// Turning command-line text into library arguments. Every refusal is a ValidationError (exit 2) or,
// while commander parses, an InvalidArgumentError (also exit 2), with the value that was refused.
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from 'commander';
import { ValidationError, parseDuration, type Duration } from '../index.js';
import { findChangedNumber } from '../deploy/json-text.js';

const INTEGER = /^\d+$/;

/** A commander parser for an integer option within bounds. */
export function integerArgument(min: number, max: number): (text: string) => number {
  return text => {
    const value = Number(text);
    if (!INTEGER.test(text) || value < min || value > max) throw new InvalidArgumentError(`Expected an integer from ${min} to ${max}.`);
    return value;
  };
}

/** A commander parser for a duration option: milliseconds, or `'5s'`, `'1m30s'`. */
export function durationArgument(min: number, max: number): (text: string) => number {
  return text => {
    let ms: number;
    try {
      ms = parseDuration(text);
    } catch {
      throw new InvalidArgumentError("Expected milliseconds or a duration like '5s' or '1m30s'.");
    }
    if (ms < min || ms > max) throw new InvalidArgumentError(`Expected a duration from ${min} ms to ${max} ms.`);
    return ms;
  };
}

/** A commander parser for a choice. */
export function choiceArgument<T extends string>(choices: readonly T[]): (text: string) => T {
  return text => {
    if (!(choices as readonly string[]).includes(text)) throw new InvalidArgumentError(`Expected one of ${choices.join(', ')}.`);
    return text as T;
  };
}

/**
 * When a job falls due, from `--delay` (passed on as text: the library's duration rule reads `1500`
 * as milliseconds and `30m` as a duration) and `--at` (epoch milliseconds or an ISO 8601 date). The
 * library checks ranges and exclusivity.
 */
export function parseWhen(options: { delay?: string; at?: string }): { delay?: Duration; at?: number | Date } {
  const when: { delay?: Duration; at?: number | Date } = {};
  if (options.delay !== undefined) when.delay = options.delay as Duration;
  if (options.at !== undefined) when.at = parseAt(options.at, '--at');
  return when;
}

/** Epoch milliseconds or an ISO 8601 date, as a number or a Date. */
export function parseAt(text: string, name: string): number | Date {
  if (INTEGER.test(text)) return Number(text);
  const date = new Date(text);
  if (Number.isNaN(date.getTime()))
    throw new ValidationError(`Expected ${name} to be epoch milliseconds or an ISO 8601 date such as 2030-01-31T12:00:00Z, got '${text}'`);
  return date;
}

/**
 * The payload of `add`: the argument, else `--file` (`-` for stdin), else stdin when it is not a
 * terminal (a pipe or a file). Parsed as JSON.
 */
export async function readPayload(argument: string | undefined, file: string | undefined): Promise<unknown> {
  if (argument !== undefined && file !== undefined)
    throw new ValidationError('Give the payload either as an argument or with --file, not both');
  let text: string;
  let source: string;
  if (argument !== undefined) {
    [text, source] = [argument, 'argument'];
  } else if (file !== undefined && file !== '-') {
    [text, source] = [await readTextFile(file), file];
  } else if (file === '-' || !process.stdin.isTTY) {
    [text, source] = [await readStdin(), 'stdin'];
  } else {
    throw new ValidationError('Give the payload as JSON: an argument, --file <path>, or on stdin');
  }
  if (text.trim() === '') throw new ValidationError(`The payload (${source}) is empty; give JSON such as '{"orderId":42}' or 'null'`);
  let payload: unknown;
  try {
    payload = JSON.parse(text) as unknown;
  } catch (error) {
    throw new ValidationError(`The payload (${source}) is not valid JSON: ${(error as Error).message}`);
  }
  const changed = findChangedNumber(text, payload);
  if (changed !== undefined) throw new ValidationError(`The payload (${source}) is not valid: payload${changed.path} ${changed.problem}`);
  return payload;
}

export async function readTextFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new ValidationError(`Cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
