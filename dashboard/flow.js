// The "Limits & retention" panel of one queue (issue 10): its rate, concurrency and default
// deadline, which completed jobs it keeps, an edit form (two PUTs with the token, like every write
// of the dashboard), and the list of completed jobs kept with their results. Like every module
// here, it puts the API's values into the page as text only (see app.js).
import { api, describe, queuePath } from './api.js';
import {
  byId,
  clip,
  el,
  fmtDuration,
  fmtPayload,
  fmtWindow,
  fmtRelative,
  report,
  resultText,
  setIfChanged,
  setText,
  syncList,
} from './dom.js';
import { groupText, jobLink } from './jobs.js';

const page = { queue: () => /** @type {string | null} */ (null), refresh: () => undefined };
/** The limits and retention last read, to fill the form in and to send only what changed. */
const latest = { limits: null, retention: null };

const INPUTS = [
  'flow-rate-max',
  'flow-rate-per',
  'flow-concurrency',
  'flow-expire-after',
  'flow-keep-count',
  'flow-keep-age',
  'flow-max-result',
];

export function connectFlowPanel(context) {
  Object.assign(page, context);
  byId('flow-edit').addEventListener('click', () => openForm());
  byId('flow-cancel').addEventListener('click', () => closeForm());
  byId('flow-form').addEventListener('submit', event => void save(event));
}

/** Forgets what the panel showed (another queue was selected). */
export function resetFlowPanel() {
  latest.limits = null;
  latest.retention = null;
  closeForm();
  byId('flow-fields').replaceChildren(el('p', { className: 'state loading', textContent: 'Loading…' }));
  setText('flow-result', '');
  byId('completed-panel').hidden = true;
  byId('completed-list').replaceChildren();
}

/** Whether the queue keeps completed jobs (then the page reads the completed list too). */
export const keepsCompleted = () => Boolean(latest.retention?.completed);

// Rendering

/** Shows what was read; `undefined` (a failed read) keeps the last value of that half, or '…'. */
export function renderFlow(limits, retention) {
  if (limits !== undefined) latest.limits = limits ?? {};
  if (retention !== undefined) latest.retention = retention ?? { maxResultBytes: 65_536 };
  const unknown = '…';
  const { rate, concurrency, expireAfter } = latest.limits ?? {};
  const { completed, maxResultBytes } = latest.retention ?? {};
  const known = latest.limits !== null;
  const kept = latest.retention !== null;
  const rows = [
    ['Rate', !known ? unknown : rate ? `at most ${rate.max} starts per ${fmtWindow(rate.per)} (sliding window)` : 'no limit'],
    ['Concurrency', !known ? unknown : concurrency === undefined ? 'no limit' : `at most ${concurrency} active at once`],
    [
      'Expire after',
      !known
        ? unknown
        : expireAfter === undefined
          ? 'no default deadline'
          : `${fmtDuration(expireAfter)} after due: not run if not started by then`,
    ],
    ['Keep completed', kept ? describeKeep(completed) : unknown],
    ['Max result', kept ? `${maxResultBytes} bytes` : unknown],
  ];
  const fields = byId('flow-fields');
  // Updated in place (a poll every 1.5 s must not disturb a selection).
  if (fields.querySelectorAll('dd').length !== rows.length) {
    fields.replaceChildren(...rows.flatMap(([label]) => [el('dt', { textContent: label }), el('dd', { dataset: { field: label } })]));
  }
  for (const [label, value] of rows) setIfChanged(fields.querySelector(`dd[data-field="${label}"]`), value);
}

function describeKeep(completed) {
  if (!completed) return 'none (the default)';
  const parts = [];
  if (completed.count !== undefined) parts.push(`the newest ${completed.count}`);
  if (completed.age !== undefined) parts.push(`none older than ${fmtDuration(completed.age)}`);
  return parts.length === 0 ? 'all' : parts.join(', ');
}

/** The completed jobs kept, newest first, each with its result. */
export function renderCompleted(jobs, total) {
  byId('completed-panel').hidden = !keepsCompleted() && jobs.length === 0;
  byId('completed-state').hidden = jobs.length > 0;
  if (jobs.length === 0) setText('completed-state', 'No completed job kept yet.');
  setText('completed-summary', total ? `${total} kept` : '');
  syncList(
    byId('completed-list'),
    jobs,
    job => job.id,
    job =>
      el(
        'li',
        { className: 'dead-item completed-item' },
        el('div', { className: 'dead-head' }, jobLink(job.id), el('span', { className: 'meta' })),
        el('p', { className: 'result-line' }),
        el(
          'details',
          {},
          el('summary', { textContent: 'full result and payload' }),
          el('pre', { className: 'result-full' }),
          el('pre', { className: 'payload' }),
        ),
      ),
    (item, job) => {
      const finished = typeof job.finishedAt === 'number' ? `finished ${fmtRelative(job.finishedAt)}` : 'completed';
      const group = groupText(job);
      setIfChanged(
        item.querySelector('.meta'),
        `${group ? `${group} · ` : ''}${finished} · ${job.attempts} attempt${job.attempts === 1 ? '' : 's'}`,
      );
      setIfChanged(item.querySelector('.result-line'), `result ${clip(resultText(job.result, 0), 200)}`);
      setIfChanged(item.querySelector('.result-full'), resultText(job.result, 2));
      setIfChanged(item.querySelector('.payload'), fmtPayload(job.payload));
    },
  );
}

// Editing

function openForm() {
  const { rate, concurrency, expireAfter } = latest.limits ?? {};
  const { completed, maxResultBytes } = latest.retention ?? {};
  const values = [rate?.max, rate?.per, concurrency, expireAfter, completed?.count, completed?.age, maxResultBytes];
  INPUTS.forEach((id, i) => {
    byId(id).value = values[i] === undefined ? '' : String(values[i]);
  });
  byId('flow-form').hidden = false;
  byId('flow-edit').hidden = true;
  byId('flow-rate-max').focus();
}

function closeForm() {
  byId('flow-form').hidden = true;
  byId('flow-edit').hidden = false;
}

/** '100' -> 100; '1s', 'x' -> as typed (the server judges); '' -> undefined. */
function read(id) {
  const text = byId(id).value.trim();
  if (text === '') return undefined;
  return /^\d+$/.test(text) ? Number(text) : text;
}

/** The bodies of the two PUTs: every field of the form (empty clears), sent only when it changed. */
function formBodies() {
  const [max, per, concurrency, expireAfter, count, age, maxResultBytes] = INPUTS.map(read);
  const limits = {
    rate: max === undefined && per === undefined ? null : { max, per },
    concurrency: concurrency ?? null,
    expireAfter: expireAfter ?? null,
  };
  const retention = { completed: count === undefined && age === undefined ? null : { count, age } };
  if (maxResultBytes !== undefined) retention.maxResultBytes = maxResultBytes;
  return { limits, retention };
}

/** What the stored values would be sent as, to tell a change from the form as it was filled in. */
function storedBodies() {
  const { rate, concurrency, expireAfter } = latest.limits ?? {};
  const { completed, maxResultBytes } = latest.retention ?? {};
  return {
    limits: { rate: rate ? { max: rate.max, per: rate.per } : null, concurrency: concurrency ?? null, expireAfter: expireAfter ?? null },
    retention: { completed: completed ? { count: completed.count, age: completed.age } : null, maxResultBytes },
  };
}

async function save(event) {
  event.preventDefault();
  const queue = page.queue();
  const wanted = formBodies();
  const stored = storedBodies();
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const writes = [];
  if (!same(wanted.limits, stored.limits)) writes.push(['limits', wanted.limits]);
  if (!same({ maxResultBytes: stored.retention.maxResultBytes, ...wanted.retention }, stored.retention))
    writes.push(['retention', wanted.retention]);
  if (writes.length === 0) {
    closeForm();
    report('flow-result', 'Nothing changed.', 'warn');
    return;
  }
  const saved = [];
  try {
    for (const [what, body] of writes) {
      await api('PUT', `${queuePath(queue)}/${what}`, body);
      saved.push(what);
    }
    closeForm();
    report('flow-result', 'Saved: every worker, pull consumer and webhook of the queue obeys it now.');
  } catch (error) {
    report(
      'flow-result',
      `${saved.length > 0 ? `The ${saved.join(' and ')} were saved; the rest was not` : 'Not saved'}: ${describe(error)}`,
      'error',
    );
  }
  page.refresh();
}
