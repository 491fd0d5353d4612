// The job browser: the selected queue's jobs in one state, a page at a time, with the API's cursor
// paging (a stack of the cursors of the pages before, for "previous"), a filter of the shown page
// by id or payload text, and one-click-then-confirm delete of a dead letter.
//
// The page shown is re-read with every refresh of the page (same state, size and cursor), so rows
// update in place; a read answered after the user moved on (another state, page or queue) is dropped.
import { api, describe, queuePath } from './api.js';
import { byId, clip, el, fmtCount, fmtPayload, fmtRelative, fmtTime, report, setIfChanged, setText, syncList } from './dom.js';
import { attemptsText, confirmThen, deleteDeadLetter, groupText, jobLink, openJob } from './jobs.js';

export const BROWSE_STATES = ['delayed', 'ready', 'active', 'dead', 'completed'];
const PAYLOAD_PREVIEW = 120;
const ERROR_PREVIEW = 200;
/** How much of a payload's JSON the filter searches (more than the preview shows; bounded for huge payloads). */
const MATCH_TEXT = 10_000;

const page = { queue: () => /** @type {string | null} */ (null), refresh: () => undefined };

const view = {
  state: 'delayed',
  limit: 25,
  /** @type {(string | undefined)[]} The cursors of the pages before this one; the first page's is undefined. */
  before: [],
  /** @type {string | undefined} This page's cursor (undefined: the first page). */
  cursor: undefined,
  /** @type {any[]} The jobs of the page shown, as last read. */
  jobs: [],
  /** @type {string | null} */
  nextCursor: null,
  loaded: false,
};

/** What identifies the page on screen: a read made for another key is stale. */
const viewKey = () => JSON.stringify([page.queue(), view.state, view.limit, view.cursor ?? null]);

function listPath() {
  const query = new URLSearchParams({ state: view.state, limit: String(view.limit) });
  if (view.cursor !== undefined) query.set('cursor', view.cursor);
  return `${queuePath(page.queue())}/jobs?${query}`;
}

export function connectBrowsePanel(context) {
  Object.assign(page, context);
  for (const button of document.querySelectorAll('button.browse-state')) {
    button.addEventListener('click', () => showState(button.dataset.state));
  }
  // The state cards open their state here.
  for (const state of BROWSE_STATES) {
    const card = byId(`count-${state}`).closest('.card');
    card.classList.add('card-link');
    card.tabIndex = 0;
    card.setAttribute('role', 'button');
    card.title = `Browse the ${state} jobs`;
    const go = () => {
      showState(state);
      byId('browse-title').scrollIntoView({ block: 'start' });
    };
    card.addEventListener('click', go);
    card.addEventListener('keydown', event => {
      if (event.key !== 'Enter' && event.key !== ' ') return;
      event.preventDefault();
      go();
    });
  }
  byId('browse-size').addEventListener('change', () => {
    view.limit = Number(byId('browse-size').value);
    firstPage();
  });
  byId('browse-next').addEventListener('click', () => {
    if (!view.nextCursor) return;
    view.before.push(view.cursor);
    turnTo(view.nextCursor);
  });
  byId('browse-prev').addEventListener('click', () => {
    if (view.before.length === 0) return;
    turnTo(view.before.pop());
  });
  byId('browse-filter').addEventListener('input', () => applyFilter());
  // Enter (or the button) finds a job by its exact id, in any state, and opens it.
  byId('browse-filter-form').addEventListener('submit', event => {
    event.preventDefault();
    const id = byId('browse-filter').value.trim();
    if (id) void openJob(id);
  });
}

/** Back to the first page of the current state, e.g. when another queue is selected. */
export function resetBrowsePanel() {
  byId('browse-filter').value = '';
  firstPage(false);
}

function firstPage(read = true) {
  view.before = [];
  turnTo(undefined, read);
}

/** Shows the page that starts after `cursor` (its rows once read: never the last page's under the new page's number). */
function turnTo(cursor, read = true) {
  view.cursor = cursor;
  view.jobs = [];
  view.nextCursor = null;
  view.loaded = false;
  byId('browse-body').replaceChildren();
  setText('browse-result', '');
  showPlaceholder('Loading…');
  renderPager();
  if (read) void load();
}

function showState(state) {
  if (!BROWSE_STATES.includes(state)) return;
  view.state = state;
  for (const button of document.querySelectorAll('button.browse-state'))
    button.setAttribute('aria-pressed', String(button.dataset.state === state));
  byId('browse-table').dataset.state = state;
  setText('browse-extra-head', state === 'completed' ? 'Finished' : 'Error / reason');
  firstPage();
}

/** The read of the page on screen, for the refresh loop: its key and path, or null without a queue. */
export function browseRead() {
  return page.queue() ? { key: viewKey(), path: listPath() } : null;
}

/** Reads the page on screen now (after the user moved to another one). */
async function load() {
  const read = browseRead();
  if (!read) return;
  renderPager();
  try {
    renderBrowse(read.key, await api('GET', read.path));
  } catch (error) {
    if (read.key === viewKey()) browseFailed(error);
  }
}

/** A read of the page failed: said under the panel's head (the rows shown so far stay). */
export function browseFailed(error) {
  report('browse-result', `Could not load the ${view.state} jobs: ${describe(error)}`, 'error');
}

/** Shows a page read for `key`; a read for a page the user already left is ignored. */
export function renderBrowse(key, answer) {
  if (key !== viewKey()) return;
  view.jobs = Array.isArray(answer?.jobs) ? answer.jobs : [];
  view.nextCursor = typeof answer?.nextCursor === 'string' ? answer.nextCursor : null;
  view.loaded = true;
  if (byId('browse-result').dataset.kind === 'error') setText('browse-result', '');
  syncList(byId('browse-body'), view.jobs, job => job.id, createRow, updateRow);
  applyFilter();
}

function createRow(job) {
  const remove = el('button', { type: 'button', className: 'danger delete-dead', textContent: 'Delete' });
  remove.dataset.needs = 'produce';
  remove.addEventListener('click', () => confirmThen(remove, 'Confirm delete', () => void deleteRow(job.id)));
  const row = el(
    'tr',
    { className: 'browse-row', title: 'Open this job' },
    el('td', { className: 'col-id' }, jobLink(job.id), el('span', { className: 'job-group' })),
    el('td', { className: 'col-due' }, el('span', { className: 'due-at' }), el('span', { className: 'sub due-in' })),
    el('td', { className: 'col-attempts num' }),
    el('td', { className: 'col-payload' }, el('code', { className: 'payload-preview' })),
    el('td', { className: 'col-extra' }, el('span', { className: 'extra-line' }), el('span', { className: 'sub extra-sub' })),
    el('td', { className: 'col-actions' }, remove),
  );
  // A click anywhere on the row opens the job, as its id does (buttons do their own thing).
  row.addEventListener('click', event => {
    if (!(event.target instanceof Element) || event.target.closest('button')) return;
    void openJob(job.id);
  });
  return row;
}

function updateRow(row, job) {
  setIfChanged(row.querySelector('.job-group'), groupText(job));
  setIfChanged(row.querySelector('.due-at'), fmtTime(job.dueAt));
  setIfChanged(row.querySelector('.due-in'), fmtRelative(job.dueAt));
  setIfChanged(row.querySelector('.col-attempts'), attemptsText(job));
  const payload = fmtPayload(job.payload, 0);
  const preview = row.querySelector('.payload-preview');
  setIfChanged(preview, clip(payload, PAYLOAD_PREVIEW));
  preview.title = clip(payload, 2000);
  const [line, sub] = extraText(job);
  setIfChanged(row.querySelector('.extra-line'), line);
  setIfChanged(row.querySelector('.extra-sub'), sub);
  row.dataset.match = `${job.id}\n${groupText(job)}\n${clip(payload, MATCH_TEXT)}`.toLowerCase();
}

/** The extra column: a dead letter's error or reason and when it died; a completed job's finish and result. */
function extraText(job) {
  if (view.state === 'dead') {
    const error = typeof job.lastError === 'string' ? (job.lastError.split('\n')[0] ?? '') : '';
    const line = error
      ? clip(error, ERROR_PREVIEW)
      : job.reason === 'expired'
        ? 'expired: not started by its deadline'
        : '(no error recorded)';
    const reason = job.reason === 'expired' ? 'expired' : 'out of attempts';
    return [line, typeof job.deadAt === 'number' ? `${reason} · died ${fmtRelative(job.deadAt)}` : reason];
  }
  if (view.state === 'completed') {
    return [
      typeof job.finishedAt === 'number' ? `${fmtTime(job.finishedAt)}` : '',
      typeof job.finishedAt === 'number' ? fmtRelative(job.finishedAt) : '',
    ];
  }
  return ['', ''];
}

async function deleteRow(id) {
  const queue = page.queue();
  const outcome = await deleteDeadLetter(queue, id);
  report('browse-result', outcome.text, outcome.kind);
  if (outcome.gone && queue === page.queue() && view.state === 'dead') {
    view.jobs = view.jobs.filter(job => job.id !== id);
    for (const row of byId('browse-body').children) if (row.dataset.key === id) row.remove();
    applyFilter();
  }
  page.refresh();
}

/** Hides the rows of the page that do not match the filter text (in the id or the payload's JSON, any case). */
function applyFilter() {
  const text = byId('browse-filter').value.trim().toLowerCase();
  let shown = 0;
  for (const row of byId('browse-body').children) {
    row.hidden = text !== '' && !(row.dataset.match ?? '').includes(text);
    if (!row.hidden) shown += 1;
  }
  const total = view.jobs.length;
  if (!view.loaded) showPlaceholder('Loading…');
  else if (total === 0)
    showPlaceholder(view.before.length === 0 ? `No ${view.state} jobs.` : 'No jobs on this page any more (they moved on). Go back a page.');
  else if (shown === 0)
    showPlaceholder(
      `None of the ${fmtCount(total)} jobs on this page matches “${clip(text, 60)}”. Press Enter to find a job by this exact id.`,
    );
  else byId('browse-state').hidden = true;
  renderPager(text === '' ? undefined : shown);
}

function showPlaceholder(text) {
  byId('browse-state').hidden = false;
  setText('browse-state', text);
}

function renderPager(shown) {
  const number = view.before.length + 1;
  const first = view.before.length * view.limit + 1;
  const range = view.jobs.length > 0 ? ` · ${fmtCount(first)}–${fmtCount(first + view.jobs.length - 1)}` : '';
  const matching = shown === undefined ? '' : ` · ${fmtCount(shown)} of ${fmtCount(view.jobs.length)} match`;
  setText('browse-page', `Page ${fmtCount(number)}${range}${matching}`);
  byId('browse-prev').disabled = view.before.length === 0;
  byId('browse-next').disabled = !view.nextCursor;
}
