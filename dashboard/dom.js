// DOM building and formatting. Everything here puts text into the page as text: `el` sets
// properties such as `textContent`, never `innerHTML`, and appends strings as text nodes.

/** The element with this id (the page's fixed skeleton, from index.html). */
export const byId = id => /** @type {HTMLElement} */ (document.getElementById(id));

/** Creates an element with properties (never HTML) and children (nodes, or strings as text). */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'dataset') Object.assign(node.dataset, value);
    else node[key] = value;
  }
  node.append(...children.filter(child => child !== null && child !== undefined));
  return node;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Creates an SVG element with attributes and an optional text (set as text, never as markup). */
export function svg(tag, attrs = {}, text = '') {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text) node.textContent = text;
  return node;
}

/** Sets a node's text only when it changed, so a re-render does not disturb a selection. */
export function setIfChanged(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

export const setText = (id, text) => setIfChanged(byId(id), text);

/** Shows a short outcome next to an action: kind is 'ok', 'warn' or 'error'. */
export function report(id, text, kind = 'ok') {
  const node = byId(id);
  node.textContent = text;
  node.dataset.kind = kind;
}

/**
 * Brings `container`'s children in line with `items`, keyed by `key`: rows that stay are updated
 * in place, so a button under the pointer is not replaced while it is being clicked. Children
 * without a key (a table's `thead` before its keyed `tbody`s) stay first, untouched.
 */
export function syncList(container, items, key, create, update) {
  const keyed = [...container.children].filter(child => child.dataset.key !== undefined);
  const fixed = container.children.length - keyed.length;
  const existing = new Map(keyed.map(child => [child.dataset.key, child]));
  const wanted = items.map(item => {
    const k = key(item);
    let node = existing.get(k);
    if (!node) {
      node = create(item);
      node.dataset.key = k;
    }
    existing.delete(k);
    update(node, item);
    return node;
  });
  for (const node of existing.values()) node.remove();
  wanted.forEach((node, i) => {
    const at = container.children[fixed + i] ?? null;
    if (at !== node) container.insertBefore(node, at);
  });
}

// Formatting

/** The server's clock minus this browser's, so "lease left" and "in 5 min" use the server's time. */
export const clock = { offsetMs: 0 };
const serverNow = () => Date.now() + clock.offsetMs;

export const fmtCount = n => Number(n ?? 0).toLocaleString('en-US');

export function fmtRate(perSecond) {
  if (perSecond > 0 && perSecond < 0.05) return '< 0.1';
  return perSecond < 10 ? perSecond.toFixed(1) : fmtCount(Math.round(perSecond));
}

/**
 * 850 -> '850 ms', 12_300 -> '12.3 s', 90_000 -> '1 min 30 s', 7_200_000 -> '2 h'; rounded down. The
 * CLI's formatDuration (src/cli/format.ts) follows the same rule; a unit test holds them together.
 */
export function fmtDuration(ms) {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.floor(abs)} ms`;
  if (abs < 60_000) return `${(Math.floor(abs / 100) / 10).toFixed(1)} s`;
  const s = Math.floor(abs / 1000);
  const pair = (big, bigUnit, small, smallUnit) => (small ? `${big} ${bigUnit} ${small} ${smallUnit}` : `${big} ${bigUnit}`);
  if (abs < 3_600_000) return pair(Math.floor(s / 60), 'min', s % 60, 's');
  if (abs < 86_400_000) return pair(Math.floor(s / 3600), 'h', Math.floor((s % 3600) / 60), 'min');
  return pair(Math.floor(s / 86_400), 'd', Math.floor((s % 86_400) / 3600), 'h');
}

const WINDOW_NAMES = { 1000: 'second', 60000: 'minute', 3600000: 'hour', 86400000: 'day' };
/** A rate's window: 'second', 'minute'..., else '250 ms', '1 min 30 s'. */
export const fmtWindow = ms => WINDOW_NAMES[ms] ?? fmtDuration(ms);

/** Milliseconds from the server's now: 'in 5 min' or '12.0 s ago'. */
export const msFromNow = at => at - serverNow();

export function fmtRelative(at) {
  const delta = msFromNow(at);
  return delta >= 0 ? `in ${fmtDuration(delta)}` : `${fmtDuration(delta)} ago`;
}

export const fmtTime = at =>
  new Date(at)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');

/** A payload as indented JSON (or its string form, for values JSON cannot show). */
export function fmtPayload(payload, indent = 2) {
  try {
    return JSON.stringify(payload, null, indent) ?? String(payload);
  } catch {
    return String(payload);
  }
}

/** A kept job's result as JSON, or what the marker of a result over maxResultBytes says. */
export function resultText(result, indent) {
  if (result && typeof result === 'object' && result.resultTooLarge === true)
    return `(not kept: ${result.bytes} bytes, over the queue's max result size)`;
  return result === undefined ? '(none)' : fmtPayload(result, indent);
}

export const clip = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
