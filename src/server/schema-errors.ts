/**
 * What a request refused by a route's JSON schema is told: the field's path as a client writes it
 * (`body.jobs[1].delay`, `params.queue`) and what is allowed there, in words, never ajv's schema
 * speak (`must match pattern "^[A-Za-z0-9]..."`, `must be equal to constant`, `must NOT have more
 * than 1 properties`). A value refused by a rule of the library (a queue name, a job id, a group)
 * gets the library's own words. This is fastify's `schemaErrorFormatter`; the status and the code
 * (400 VALIDATION) come from `toHttpError`.
 */
import { describeValue, GROUP_RULE, JOB_ID_RULE, QUEUE_NAME_RULE } from '../index.js';

/** One schema violation as ajv reports it (the fields used here; `schema`, `parentSchema` and `data` with ajv's `verbose`). */
export interface SchemaViolation {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
  schema?: unknown;
  parentSchema?: SchemaShape;
  data?: unknown;
}

/** The parts of a JSON schema the messages read. */
interface SchemaShape {
  pattern?: unknown;
  maxLength?: unknown;
  description?: unknown;
  properties?: Record<string, SchemaShape & { const?: unknown }>;
  oneOf?: SchemaShape[];
}

/** The library's rules that the schemas carry, each with the words of its own check (src/core/validate.ts). */
const RULES = [
  { rule: QUEUE_NAME_RULE, what: 'a queue name' },
  { rule: JOB_ID_RULE, what: 'a job id' },
  { rule: GROUP_RULE, what: 'a group name' },
] as const;
const RULE_KEYWORDS = new Set(['pattern', 'minLength', 'maxLength', 'type']);
/** How many violations one message tells at most (ajv stops at the first but for `oneOf`'s alternatives). */
const MAX_SHOWN = 3;

/**
 * The message of a refused request part (`body`, `params`, `querystring`, `headers`), e.g.
 * "body.jobs[1].delay must be >= 0, got -5" or "body.backoff.type must be one of 'fixed',
 * 'exponential', got 'linear'".
 */
export function formatSchemaErrors(errors: readonly SchemaViolation[], part: string): Error {
  const prefix = part === 'querystring' ? 'query' : part;
  return new Error(tell(errors, prefix).slice(0, MAX_SHOWN).join('; '));
}

function tell(errors: readonly SchemaViolation[], prefix: string): string[] {
  // A `oneOf` reports each alternative's failure first, then its own: told once, as the alternative meant.
  const choice = errors.find(error => error.keyword === 'oneOf');
  if (choice) return [tellChoice(choice, errors, prefix)];
  return errors.map(error => tellOne(error, prefix));
}

function tellOne(error: SchemaViolation, prefix: string): string {
  const where = fieldPath(prefix, error.instancePath);
  const got = `, got ${shown(error.data)}`;
  const { params } = error;
  const known = RULE_KEYWORDS.has(error.keyword) ? ruleOf(error.parentSchema) : undefined;
  if (known) return `${where}: Expected ${known.what} of ${known.rule.description}, got ${shown(error.data, true)}`;
  switch (error.keyword) {
    case 'additionalProperties':
      return `${where} has an unknown field \`${String(params.additionalProperty).slice(0, 60)}\`${knownFields(error.parentSchema)}`;
    case 'required':
      return `${where} is missing the required field \`${String(params.missingProperty)}\``;
    case 'type':
      return `${where} must be ${typeWords(params.type)}${got}`;
    case 'enum':
      return `${where} must be one of ${listed(params.allowedValues)}${got}`;
    case 'const':
      return `${where} must be ${JSON.stringify(params.allowedValue)}${got}`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `${where} must be ${String(params.comparison)} ${String(params.limit)}${got}`;
    case 'minLength':
      return `${where} must have at least ${plural(params.limit, 'character')}, got ${shown(error.data, true)}`;
    case 'maxLength':
      return `${where} must have at most ${plural(params.limit, 'character')}, got ${shown(error.data, true)}`;
    case 'minItems':
      return `${where} must have at least ${plural(params.limit, 'entry', 'entries')}, got ${countOf(error.data)}`;
    case 'maxItems':
      return `${where} must have at most ${plural(params.limit, 'entry', 'entries')}, got ${countOf(error.data)}`;
    case 'minProperties':
    case 'maxProperties':
      return `${where}: ${fieldCountRule(error)}`;
    case 'pattern':
    case 'format':
      return `${where} is not valid: ${describe(error.parentSchema) ?? `expected the format ${String(params.format ?? params.pattern)}`}${got}`;
    default:
      return `${where} ${error.message ?? 'is not valid'}${got}`;
  }
}

/**
 * A `oneOf` of objects told by the alternative its `type` field names (the backoff's 'fixed' or
 * 'exponential'): an unknown `type` lists the known ones; a known one tells its own violations.
 */
function tellChoice(choice: SchemaViolation, errors: readonly SchemaViolation[], prefix: string): string {
  const where = fieldPath(prefix, choice.instancePath);
  const alternatives = Array.isArray(choice.schema) ? (choice.schema as SchemaShape[]) : [];
  const kinds = alternatives.map(alternative => alternative.properties?.type?.const);
  const data = choice.data;
  const expected = alternatives.length > 0 ? `: ${alternatives.map(shape).join(' or ')}` : '';
  if (kinds.some(kind => kind === undefined) || typeof data !== 'object' || data === null || Array.isArray(data))
    return `${where} must be an object${expected}, got ${shown(data)}`;
  const kind = (data as Record<string, unknown>).type;
  const index = kinds.indexOf(kind);
  if (index === -1) return `${where}.type must be one of ${listed(kinds)}, got ${shown(kind)}`;
  const branch = `${choice.schemaPath}/${index}/`;
  const own = errors.filter(error => error.schemaPath.startsWith(branch));
  return own.length > 0 ? own.map(error => tellOne(error, prefix)).join('; ') : `${where} is not valid${expected}`;
}

/** An object schema as a client writes it: `{ type: 'exponential', delayMs, maxDelayMs?, jitter? }`. */
function shape(schema: SchemaShape & { required?: unknown }): string {
  const required = Array.isArray(schema.required) ? schema.required : [];
  const fields = Object.entries(schema.properties ?? {}).map(([name, field]) =>
    field.const !== undefined ? `${name}: ${listed(field.const)}` : `${name}${required.includes(name) ? '' : '?'}`,
  );
  return `{ ${fields.join(', ')} }`;
}

/** `body` + `/jobs/1/delay` -> `body.jobs[1].delay` (a JSON pointer's segments; numbers are array indexes). */
export function fieldPath(prefix: string, pointer: string): string {
  if (pointer === '') return prefix;
  return pointer
    .slice(1)
    .split('/')
    .map(segment => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, segment) => (/^\d+$/.test(segment) ? `${path}[${segment}]` : `${path}.${segment}`), prefix);
}

/** "give either `delay` or `at`, not both" from a schema's `minProperties`/`maxProperties` over its fields. */
function fieldCountRule(error: SchemaViolation): string {
  const names = Object.keys(error.parentSchema?.properties ?? {}).map(name => `\`${name}\``);
  const limit = Number(error.params.limit);
  const count = countOf(error.data);
  if (limit === 1 && names.length === 2) {
    return error.keyword === 'maxProperties' ? `give either ${names[0]} or ${names[1]}, not both` : `give ${names[0]} or ${names[1]}`;
  }
  const bound = error.keyword === 'maxProperties' ? 'at most' : 'at least';
  return `give ${bound} ${limit} of ${names.join(', ')}, got ${count}`;
}

function knownFields(schema: SchemaShape | undefined): string {
  const names = Object.keys(schema?.properties ?? {});
  return names.length > 0 ? ` (known: ${names.join(', ')})` : '';
}

function ruleOf(schema: SchemaShape | undefined): (typeof RULES)[number] | undefined {
  if (!schema) return undefined;
  return RULES.find(({ rule }) => rule.pattern === schema.pattern && rule.maxLength === schema.maxLength);
}

/** The schema's description without its last full stop, as the part after "is not valid:". */
function describe(schema: SchemaShape | undefined): string | undefined {
  if (typeof schema?.description !== 'string') return undefined;
  const text = schema.description.replace(/\.$/, '');
  return text.charAt(0).toLowerCase() + text.slice(1);
}

/** `'integer,string'` or `['integer', 'null']` -> "an integer or a string" / "an integer or null". */
function typeWords(type: unknown): string {
  const names = (Array.isArray(type) ? type : String(type).split(',')).map(String);
  const word = (name: string) =>
    name === 'null' ? 'null' : name === 'integer' || name === 'object' || name === 'array' ? `an ${name}` : `a ${name}`;
  return names.map(word).join(' or ');
}

function listed(values: unknown): string {
  return (Array.isArray(values) ? values : [values]).map(value => JSON.stringify(value).replaceAll('"', "'")).join(', ');
}

function plural(count: unknown, one: string, many = `${one}s`): string {
  return `${String(count)} ${Number(count) === 1 ? one : many}`;
}

function countOf(data: unknown): string {
  if (Array.isArray(data)) return plural(data.length, 'entry', 'entries');
  if (typeof data === 'object' && data !== null) return plural(Object.keys(data).length, 'field');
  return shown(data);
}

/**
 * A refused value as the library's messages quote it (`'a b'`, with `withLength` `'a b' (3
 * characters)`), control characters escaped; a missing one is 'nothing'. The HTTP answers and the
 * tokens file's checks both use it.
 */
export function shown(value: unknown, withLength = false): string {
  return value === undefined ? 'nothing' : describeValue(value, withLength);
}
