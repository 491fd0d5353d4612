// A reader of the sandglass Lua sources just deep enough for the layout tests: which names a file
// defines at its top level, which it uses, and which top-level definitions a piece of code reaches.
// The sources keep to one shape (STYLE.md): top-level definitions start in column 0, a function's
// `end` is the first line that is exactly `end` after it.

/** The text of Lua code without its comments and string literals, which hold no names. */
export function codeOf(source: string): string {
  let out = '';
  let i = 0;
  while (i < source.length) {
    const rest = source.slice(i, i + 4);
    if (rest.startsWith('--[[')) {
      const end = source.indexOf(']]', i + 4);
      i = end === -1 ? source.length : end + 2;
    } else if (rest.startsWith('--')) {
      const end = source.indexOf('\n', i);
      i = end === -1 ? source.length : end;
    } else if (source[i] === "'" || source[i] === '"') {
      const quote = source[i];
      i++;
      while (i < source.length && source[i] !== quote) i += source[i] === '\\' ? 2 : 1;
      i++;
      out += "''";
    } else {
      out += source[i];
      i++;
    }
  }
  return out;
}

/** The names used in `code`, leaving out field names (after `.` or `:`) and keywords. */
export function usedNames(code: string): Set<string> {
  const names = new Set<string>();
  for (const match of code.matchAll(/(?<![.:\w])[A-Za-z_]\w*/g)) {
    if (!KEYWORDS.has(match[0])) names.add(match[0]);
  }
  return names;
}

const KEYWORDS = new Set(
  'and break do else elseif end false for function if in local nil not or repeat return then true until while'.split(' '),
);

/**
 * The top-level definitions of a file: name -> the code that defines it (a whole function, or what
 * a `local` statement assigns: `local a, b = x, y` gives both names the text `x, y`).
 */
export function topLevelDefinitions(code: string): Map<string, string> {
  const definitions = new Map<string, string>();
  const lines = code.split('\n');
  const line = (i: number) => lines[i] ?? '';
  for (let i = 0; i < lines.length; i++) {
    const fn = /^local function (\w+)/.exec(line(i))?.[1];
    if (fn !== undefined) {
      let j = i;
      while (j < lines.length && line(j) !== 'end') j++;
      definitions.set(fn, lines.slice(i, j + 1).join('\n'));
      i = j;
      continue;
    }
    const locals = /^local ([\w, ]+?)\s*(=|$)/.exec(line(i));
    if (locals) {
      // The statement runs on while the next lines are indented (a value wrapped over lines).
      let j = i;
      while (j + 1 < lines.length && /^\s+\S/.test(line(j + 1))) j++;
      const statement = lines.slice(i, j + 1).join('\n');
      const value = locals[2] === '=' ? statement.slice(statement.indexOf('=') + 1) : '';
      for (const name of (locals[1] ?? '').split(',')) definitions.set(name.trim(), value);
    }
  }
  return definitions;
}

/**
 * The names of `definitions` that `code` reaches: those it uses, and those their definitions use,
 * and so on (a function the code never calls, directly or through another, is not reached). The
 * definitions of `opaque` names count as reached but are not followed.
 */
export function reachedNames(code: string, definitions: ReadonlyMap<string, string>, opaque: ReadonlySet<string> = new Set()): Set<string> {
  const reached = new Set<string>();
  const pending = [...usedNames(code)];
  while (pending.length > 0) {
    const name = pending.pop() as string;
    const definition = definitions.get(name);
    if (definition === undefined || reached.has(name)) continue;
    reached.add(name);
    if (!opaque.has(name)) pending.push(...usedNames(definition));
  }
  return reached;
}
