// The "Groups" panel of one queue (issue 20): its groups with waiting or running jobs, busiest
// first, a page at a time ("load more" follows the API's cursor), a filter of the loaded rows to the groups held
// back by their limits or paused, a Pause/Resume button per group, and the limits every group
// follows unless it has its own. A queue without groups never shows the panel, so it looks as
// before. Group names are user text: like every module here, this one puts them into the page as
// text only (see app.js).
import { api, describe, queuePath } from './api.js';
import { byId, el, fmtCount, fmtWindow, report, setIfChanged, setText, syncList } from './dom.js';

/** Groups per "load more"; the refresh re-reads every loaded row, up to the API's page limit. */
const PAGE = 50;
const MAX_ROWS = 1000;
const FILTERS = ['all', 'limited', 'paused'];

const page = { queue: () => /** @type {string | null} */ (null), refresh: () => undefined };

const view = {
  /** @type {any[]} The groups loaded, in the order last read (busiest first). */
  groups: [],
  /** @type {string | null} Where the next page starts, or null on the last one. */
  nextCursor: null,
  /** How many rows the refresh reads again: the first page, plus each page loaded since. */
  window: PAGE,
  filter: 'all',
  loaded: false,
  /** The limits of every group without its own (null until read). */
  defaults: null,
};

/** The API path of a group's own routes. */
export const groupPath = (queue, group) => `${queuePath(queue)}/groups/${encodeURIComponent(group)}`;

export function connectGroupsPanel(context) {
  Object.assign(page, context);
  for (const button of document.querySelectorAll('button.groups-filter')) {
    button.addEventListener('click', () => showFilter(button.dataset.filter));
  }
  byId('groups-more').addEventListener('click', () => void loadMore());
}

/** Forgets what the panel showed (another queue was selected): hidden until the queue is known to have groups. */
export function resetGroupsPanel() {
  view.groups = [];
  view.nextCursor = null;
  view.window = PAGE;
  view.loaded = false;
  view.defaults = null;
  byId('groups-body').replaceChildren();
  setText('groups-result', '');
  setText('groups-summary', '');
  byId('group-limits').replaceChildren();
  showFilter('all');
  showPanel(false);
}

/** Whether the queue has groups, as last read (then the page reads the default group limits too). */
export const hasGroups = () => view.groups.length > 0;

/** The read of the loaded rows, for the refresh loop: its key and path, or null without a queue. */
export function groupsRead() {
  const queue = page.queue();
  if (!queue) return null;
  const limit = Math.min(view.window, MAX_ROWS);
  return { key: JSON.stringify([queue, limit]), path: `${queuePath(queue)}/groups?limit=${limit}` };
}

const readKey = () => groupsRead()?.key;

// Rendering

/** Shows the groups read for `key` (a read made before "load more" or for another queue is ignored). */
export function renderGroups(key, answer) {
  if (key !== readKey()) return;
  view.groups = Array.isArray(answer?.groups) ? answer.groups : [];
  view.nextCursor = typeof answer?.nextCursor === 'string' ? answer.nextCursor : null;
  view.loaded = true;
  const firstShown = byId('groups-panel').hidden && hasGroups();
  showPanel(hasGroups());
  syncList(byId('groups-body'), view.groups, group => group.group, createRow, updateRow);
  applyFilter();
  // The default limits are read with each refresh once the queue is known to have groups; the
  // first time, at once rather than one refresh later.
  if (firstShown && view.defaults === null) void loadDefaults();
}

/** Shows the limits every group follows unless it has its own; `undefined` (a failed read) keeps the last. */
export function renderGroupLimits(limits) {
  if (limits !== undefined) view.defaults = limits ?? {};
  const known = view.defaults !== null;
  const { concurrency, rate } = view.defaults ?? {};
  const rows = [
    ['Concurrency', !known ? '…' : concurrency === undefined ? 'no limit' : `at most ${concurrency} active at once in each group`],
    ['Rate', !known ? '…' : rate ? `at most ${rate.max} starts per ${fmtWindow(rate.per)} in each group (sliding window)` : 'no limit'],
  ];
  const fields = byId('group-limits');
  if (fields.querySelectorAll('dd').length !== rows.length)
    fields.replaceChildren(...rows.flatMap(([label]) => [el('dt', { textContent: label }), el('dd', { dataset: { field: label } })]));
  for (const [label, value] of rows) setIfChanged(fields.querySelector(`dd[data-field="${label}"]`), value);
}

async function loadDefaults() {
  const queue = page.queue();
  try {
    const limits = await api('GET', `${queuePath(queue)}/group-limits`);
    if (queue === page.queue()) renderGroupLimits(limits);
  } catch (error) {
    if (queue === page.queue()) report('groups-result', `Could not load the group limits: ${describe(error)}`, 'error');
  }
}

function showPanel(shown) {
  byId('groups-panel').hidden = !shown;
  document.querySelector('.nav-link[data-target="groups-panel"]').hidden = !shown;
}

function createRow(group) {
  const toggle = el('button', { type: 'button', className: 'group-pause' });
  toggle.dataset.needs = 'admin';
  toggle.addEventListener('click', () => void setPaused(group.group, toggle.dataset.paused !== 'true', toggle));
  return el(
    'tr',
    { className: 'group-row' },
    el('th', { scope: 'row', className: 'group-name' }),
    el('td', { className: 'num waiting' }),
    el('td', { className: 'num ready' }),
    el('td', { className: 'num active' }),
    el('td', { className: 'limited' }),
    el('td', { className: 'paused' }),
    el('td', { className: 'group-actions' }, toggle),
  );
}

function updateRow(row, group) {
  setIfChanged(row.querySelector('.group-name'), group.group);
  for (const name of ['waiting', 'ready', 'active']) {
    const cell = row.querySelector(`.${name}`);
    setIfChanged(cell, fmtCount(group[name]));
    cell.classList.toggle('zero', !group[name]);
  }
  const limited = row.querySelector('.limited');
  setIfChanged(limited, group.limited ? 'held' : '–');
  limited.title = group.limited ? 'Held back by its concurrency or rate limit right now' : '';
  setIfChanged(row.querySelector('.paused'), group.paused ? 'paused' : '–');
  row.dataset.limited = String(Boolean(group.limited));
  row.dataset.paused = String(Boolean(group.paused));
  const toggle = row.querySelector('.group-pause');
  toggle.dataset.paused = String(Boolean(group.paused));
  // A click in flight keeps its "Pausing…" until its own refresh.
  if (toggle.dataset.busy !== 'true') setIfChanged(toggle, group.paused ? 'Resume' : 'Pause');
}

// Filter and pages

function showFilter(filter) {
  if (!FILTERS.includes(filter)) return;
  view.filter = filter;
  for (const button of document.querySelectorAll('button.groups-filter'))
    button.setAttribute('aria-pressed', String(button.dataset.filter === filter));
  applyFilter();
}

/** Hides the loaded rows the filter leaves out, and says what is shown. */
function applyFilter() {
  let shown = 0;
  for (const row of byId('groups-body').children) {
    row.hidden = view.filter !== 'all' && row.dataset[view.filter] !== 'true';
    if (!row.hidden) shown += 1;
  }
  const total = view.groups.length;
  const held = view.groups.filter(group => group.limited).length;
  const paused = view.groups.filter(group => group.paused).length;
  const more = view.nextCursor ? ' (more to load)' : '';
  setText(
    'groups-summary',
    total === 0
      ? ''
      : `${fmtCount(total)} group${total === 1 ? '' : 's'} loaded${more} · ${fmtCount(held)} held · ${fmtCount(paused)} paused`,
  );
  const state = byId('groups-state');
  state.hidden = !view.loaded || shown > 0 || total === 0;
  if (!state.hidden)
    setText(
      'groups-state',
      `None of the ${fmtCount(total)} loaded groups is ${view.filter === 'limited' ? 'held by its limits' : 'paused'}.`,
    );
  const atMost = total >= MAX_ROWS;
  byId('groups-more').hidden = !view.nextCursor || atMost;
  setText('groups-cap', view.nextCursor && atMost ? `The ${fmtCount(MAX_ROWS)} busiest groups are shown.` : '');
}

/** Reads the page after the last loaded row and appends it; the refresh then reads all of them again. */
async function loadMore() {
  const queue = page.queue();
  const cursor = view.nextCursor;
  if (!queue || !cursor) return;
  const button = byId('groups-more');
  button.disabled = true;
  try {
    const answer = await api('GET', `${queuePath(queue)}/groups?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`);
    if (queue !== page.queue() || cursor !== view.nextCursor) return;
    // Counts move between reads: a group already loaded is updated in place rather than listed twice.
    const loaded = new Set(view.groups.map(group => group.group));
    const added = (Array.isArray(answer?.groups) ? answer.groups : []).filter(group => !loaded.has(group.group));
    view.window = Math.min(view.window + PAGE, MAX_ROWS);
    renderGroups(readKey(), { groups: [...view.groups, ...added], nextCursor: answer?.nextCursor });
  } catch (error) {
    report('groups-result', `Could not load more groups: ${describe(error)}`, 'error');
  } finally {
    button.disabled = false;
  }
}

// Pause and resume

async function setPaused(group, pause, button) {
  const queue = page.queue();
  button.dataset.busy = 'true';
  button.disabled = true;
  button.textContent = pause ? 'Pausing…' : 'Resuming…';
  try {
    await api('POST', `${groupPath(queue, group)}/${pause ? 'pause' : 'resume'}`, {});
    report(
      'groups-result',
      pause ? `Group ${group} is paused: its jobs wait until it is resumed.` : `Group ${group} is resumed: its jobs run again.`,
    );
  } catch (error) {
    report('groups-result', `Could not ${pause ? 'pause' : 'resume'} group ${group}: ${describe(error)}`, 'error');
  } finally {
    button.dataset.busy = 'false';
    button.disabled = false;
  }
  page.refresh();
}
