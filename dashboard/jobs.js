// The job panels of one queue: active jobs, dead letters (retry, purge), job lookup (cancel,
// reschedule) and the "add a job" form. Each state change is one POST or DELETE from a click.
import { ApiError, api, describe, jobPath, queuePath } from './api.js';
import {
  byId,
  clip,
  el,
  fmtCount,
  fmtDuration,
  fmtPayload,
  fmtRelative,
  fmtTime,
  msFromNow,
  report,
  resultText,
  setIfChanged,
  setText,
  syncList,
} from './dom.js';

/** What the panels need from the page: the selected queue, a refresh, and a way to select one. */
const page = { queue: () => /** @type {string | null} */ (null), refresh: () => undefined, select: _name => undefined };
let lookupId = '';

export function connectJobPanels(context) {
  Object.assign(page, context);
  byId('lookup-form').addEventListener('submit', event => {
    event.preventDefault();
    void lookup(byId('lookup-id').value.trim());
  });
  byId('lookup-cancel').addEventListener('click', () => {
    const button = byId('lookup-cancel');
    // A dead letter is deleted for good: that asks twice, like every delete on the page.
    if (button.dataset.dead === 'true') confirmThen(button, 'Click again to delete it', () => void deleteFromLookup());
    else void cancelJob();
  });
  byId('reschedule-form').addEventListener('submit', event => void rescheduleJob(event));
  byId('retry-all').addEventListener('click', () => void retryDead());
  byId('purge-all').addEventListener('click', () => void purgeAll());
  byId('add-form').addEventListener('submit', event => void addJob(event));
}

/** Forgets what the lookup showed (another queue was selected). */
export function resetJobPanels() {
  lookupId = '';
  byId('lookup-result').hidden = true;
  byId('active-body').replaceChildren();
  byId('dead-list').replaceChildren();
  for (const id of ['active-state', 'dead-state']) {
    byId(id).hidden = false;
    setText(id, 'Loading…');
  }
  for (const id of ['dead-result', 'lookup-message']) setText(id, '');
}

/** A job id as a button that opens the job in the lookup panel. */
export function jobLink(id) {
  const button = el('button', { type: 'button', className: 'link', textContent: id, title: 'Open this job' });
  button.addEventListener('click', () => void lookup(id));
  return button;
}

export const attemptsText = job => (job.maxAttempts ? `${job.attempts} of ${job.maxAttempts}` : String(job.attempts));

/** A job's group as the job lists show it ('' for the default group, whose jobs carry none). */
export const groupText = job => (typeof job.group === 'string' ? `group ${job.group}` : '');

// Active jobs

export function renderActive(jobs) {
  byId('active-state').hidden = jobs.length > 0;
  if (jobs.length === 0) setText('active-state', 'No job is running.');
  syncList(
    byId('active-body'),
    jobs,
    job => job.id,
    job =>
      el(
        'tr',
        {},
        el('td', {}, jobLink(job.id), el('span', { className: 'job-group' })),
        el('td', { className: 'attempt' }),
        el('td', { className: 'due' }),
        el('td', { className: 'lease' }, el('span', { className: 'lease-text' })),
      ),
    (row, job) => {
      setIfChanged(row.querySelector('.job-group'), groupText(job));
      setIfChanged(row.querySelector('.attempt'), attemptsText(job));
      const due = row.querySelector('.due');
      setIfChanged(due, fmtRelative(job.dueAt));
      due.title = fmtTime(job.dueAt);
      const left = msFromNow(Number(job.leaseUntilAt ?? 0));
      const lease = row.querySelector('.lease-text');
      setIfChanged(lease, left > 0 ? fmtDuration(left) : 'expired: to be reaped');
      lease.classList.toggle('warn', left < 5000);
    },
  );
}

// Dead letters

export function renderDead(jobs, total) {
  byId('dead-state').hidden = jobs.length > 0;
  if (jobs.length === 0) setText('dead-state', 'No dead letters.');
  const count = Number(total ?? jobs.length);
  setText('retry-all', count > 0 ? `Retry all (${fmtCount(count)})` : 'Retry all');
  byId('retry-all').disabled = count === 0;
  if (byId('purge-all').dataset.armed !== 'true') byId('purge-all').disabled = count === 0;
  syncList(
    byId('dead-list'),
    jobs,
    job => job.id,
    job => {
      const retry = el('button', { type: 'button', className: 'retry', textContent: 'Retry' });
      retry.dataset.needs = 'admin';
      retry.addEventListener('click', () => void retryDead(job.id));
      const remove = el('button', { type: 'button', className: 'danger delete-dead', textContent: 'Delete' });
      remove.dataset.needs = 'produce';
      remove.addEventListener('click', () => confirmThen(remove, 'Confirm delete', () => void deleteFromList(job.id)));
      return el(
        'li',
        { className: 'dead-item' },
        el('div', { className: 'dead-head' }, jobLink(job.id), el('span', { className: 'meta' }), retry, remove),
        el('p', { className: 'error-line' }),
        el('p', { className: 'payload-line' }),
        el(
          'details',
          {},
          el('summary', { textContent: 'error stack and full payload' }),
          el('pre', { className: 'error-stack' }),
          el('pre', { className: 'payload' }),
        ),
      );
    },
    (item, job) => {
      const died = typeof job.deadAt === 'number' ? `died ${fmtRelative(job.deadAt)}` : 'dead';
      const group = groupText(job);
      setIfChanged(
        item.querySelector('.meta'),
        `${group ? `${group} · ` : ''}${died} · ${job.attempts} attempt${job.attempts === 1 ? '' : 's'}`,
      );
      const error = typeof job.lastError === 'string' ? job.lastError : '';
      const cause = job.reason === 'expired' ? 'expired: not started by its deadline' : '(no error recorded)';
      setIfChanged(item.querySelector('.error-line'), error ? clip(error.split('\n')[0] ?? '', 300) : cause);
      setIfChanged(item.querySelector('.error-stack'), error || '(no error recorded)');
      setIfChanged(item.querySelector('.payload-line'), `payload ${clip(fmtPayload(job.payload, 0), 160)}`);
      setIfChanged(item.querySelector('.payload'), fmtPayload(job.payload));
    },
  );
}

/** Retries one dead letter, or all of them when `id` is undefined. */
async function retryDead(id) {
  try {
    const result = await api('POST', `${queuePath(page.queue())}/dead/retry`, id === undefined ? {} : { ids: [id] });
    if (id === undefined) report('dead-result', `${fmtCount(result?.moved)} dead letter(s) are due again.`);
    else
      report('dead-result', result?.moved ? `Job ${id} is due again.` : `Job ${id} was not dead any more.`, result?.moved ? 'ok' : 'warn');
  } catch (error) {
    report('dead-result', `Retry failed: ${describe(error)}`, 'error');
  }
  page.refresh();
}

/** Purge asks twice: the first click arms the button for a few seconds (no modal dialog). */
async function purgeAll() {
  const button = byId('purge-all');
  if (button.dataset.armed !== 'true') {
    button.dataset.armed = 'true';
    button.textContent = 'Click again to delete all dead letters';
    setTimeout(() => disarm(button), 4000);
    return;
  }
  disarm(button);
  try {
    const result = await api('DELETE', `${queuePath(page.queue())}/dead`);
    report('dead-result', `${fmtCount(result?.deleted)} dead letter(s) deleted.`);
  } catch (error) {
    report('dead-result', `Purge failed: ${describe(error)}`, 'error');
  }
  page.refresh();
}

function disarm(button) {
  button.dataset.armed = 'false';
  button.textContent = 'Purge all';
}

/**
 * A delete asks twice, without a modal dialog: the first click arms the button for a few seconds
 * (its text says what the second click does), the second runs `action`.
 */
export function confirmThen(button, armedText, action) {
  if (button.dataset.armed === 'true') {
    disarmButton(button);
    action();
    return;
  }
  button.dataset.label = button.textContent;
  button.dataset.armed = 'true';
  button.textContent = armedText;
  disarmTimers.set(
    button,
    setTimeout(() => disarmButton(button), 4000),
  );
}

/** The pending disarm of each armed button (a button armed again gets a fresh few seconds). */
const disarmTimers = new WeakMap();

function disarmButton(button) {
  clearTimeout(disarmTimers.get(button));
  if (button.dataset.armed !== 'true') return;
  button.dataset.armed = 'false';
  button.textContent = button.dataset.label ?? button.textContent;
}

/**
 * Deletes one dead letter of `queue` and answers what to tell the user: `{ text, kind, gone }`
 * (`gone`: the job is not there any more, deleted now or before). The job is read first, so that a
 * dead letter retried meanwhile (now waiting or running again) is not cancelled by mistake.
 */
export async function deleteDeadLetter(queue, id) {
  try {
    const job = await api('GET', jobPath(queue, id));
    if (job?.state !== 'dead')
      return { text: `Job ${id} is no longer a dead letter (it is ${job?.state} now): not deleted.`, kind: 'warn', gone: false };
    await api('DELETE', jobPath(queue, id));
    return { text: `Dead letter ${id} deleted.`, kind: 'ok', gone: true };
  } catch (error) {
    if (error instanceof ApiError && error.status === 404)
      return { text: `Job ${id} was already gone (deleted, retried and completed, or never there).`, kind: 'warn', gone: true };
    if (error instanceof ApiError && error.code === 'JOB_RUNNING')
      return { text: `Job ${id} is running again: not deleted.`, kind: 'warn', gone: false };
    return { text: `Delete failed: ${describe(error)}`, kind: 'error', gone: false };
  }
}

async function deleteFromList(id) {
  const outcome = await deleteDeadLetter(page.queue(), id);
  report('dead-result', outcome.text, outcome.kind);
  if (outcome.gone) for (const item of byId('dead-list').children) if (item.dataset.key === id) item.remove();
  page.refresh();
}

async function deleteFromLookup() {
  const id = lookupId;
  if (!id) return;
  const outcome = await deleteDeadLetter(page.queue(), id);
  if (outcome.gone) byId('lookup-result').hidden = true;
  report('lookup-message', outcome.text, outcome.kind);
  page.refresh();
}

// Job lookup, cancel, reschedule

/** Opens a job of the selected queue in the lookup panel (its details, and what can be done with it). */
export const openJob = id => lookup(id);

async function lookup(id) {
  const queue = page.queue();
  if (!id) return;
  if (!queue) {
    report('lookup-message', 'Select a queue first.', 'warn');
    return;
  }
  byId('lookup-id').value = id;
  lookupId = id;
  setText('lookup-message', '');
  try {
    showJob(await api('GET', jobPath(queue, id)));
  } catch (error) {
    byId('lookup-result').hidden = true;
    if (error instanceof ApiError && error.status === 404)
      report('lookup-message', `No job with id ${id} in this queue (it completed, was cancelled, or never existed).`, 'warn');
    else report('lookup-message', `Lookup failed: ${describe(error)}`, 'error');
  }
  byId('lookup-title').scrollIntoView({ block: 'nearest' });
}

function showJob(job) {
  const rows = [
    ['Id', job.id],
    ['State', job.state],
    ...(typeof job.group === 'string' ? [['Group', job.group]] : []),
    ['Due', `${fmtTime(job.dueAt)} (${fmtRelative(job.dueAt)})`],
    ['Attempts', attemptsText(job)],
  ];
  if (typeof job.leaseUntilAt === 'number') rows.push(['Lease until', `${fmtTime(job.leaseUntilAt)} (${fmtRelative(job.leaseUntilAt)})`]);
  if (typeof job.expiresAt === 'number')
    rows.push(['Expires', `${fmtTime(job.expiresAt)} (${fmtRelative(job.expiresAt)}): not run if not started by then`]);
  if (typeof job.deadAt === 'number') rows.push(['Died', `${fmtTime(job.deadAt)} (${fmtRelative(job.deadAt)})`]);
  if (job.reason === 'expired') rows.push(['Reason', 'expired: not started by its deadline']);
  else if (job.reason === 'failed') rows.push(['Reason', 'failed: out of attempts']);
  if (typeof job.finishedAt === 'number') rows.push(['Finished', `${fmtTime(job.finishedAt)} (${fmtRelative(job.finishedAt)})`]);
  const fields = byId('lookup-fields');
  fields.replaceChildren();
  for (const [label, value] of rows)
    fields.append(
      el('dt', { textContent: label }),
      el('dd', { textContent: value, className: label === 'State' ? `state-${value}` : label === 'Reason' ? 'reason' : '' }),
    );
  if (typeof job.lastError === 'string' && job.lastError)
    fields.append(
      el('dt', { textContent: 'Last error' }),
      el('dd', {}, el('pre', { className: 'error-stack', textContent: job.lastError })),
    );
  if (job.state === 'completed')
    fields.append(
      el('dt', { textContent: 'Result' }),
      el('dd', {}, el('pre', { className: 'result-full', textContent: resultText(job.result, 2) })),
    );
  fields.append(
    el('dt', { textContent: 'Payload' }),
    el('dd', {}, el('pre', { className: 'payload', textContent: fmtPayload(job.payload) })),
  );
  const cancel = byId('lookup-cancel');
  cancel.hidden = job.state === 'completed';
  cancel.dataset.armed = 'false';
  cancel.dataset.dead = String(job.state === 'dead');
  cancel.textContent = job.state === 'dead' ? 'Delete dead letter' : 'Cancel job';
  byId('lookup-result').hidden = false;
}

async function cancelJob() {
  const id = lookupId;
  if (!id) return;
  try {
    await api('DELETE', jobPath(page.queue(), id));
    byId('lookup-result').hidden = true;
    report('lookup-message', `Job ${id} was cancelled.`);
  } catch (error) {
    if (error instanceof ApiError && error.code === 'JOB_RUNNING')
      report('lookup-message', `Job ${id} is running: it cannot be cancelled now.`, 'warn');
    else if (error instanceof ApiError && error.status === 404) report('lookup-message', `Job ${id} no longer exists.`, 'warn');
    else report('lookup-message', `Cancel failed: ${describe(error)}`, 'error');
  }
  page.refresh();
}

async function rescheduleJob(event) {
  event.preventDefault();
  const id = lookupId;
  if (!id) return;
  try {
    await api('POST', `${jobPath(page.queue(), id)}/reschedule`, { delay: parseDelay(byId('reschedule-delay').value) });
    byId('reschedule-delay').value = '';
    await lookup(id);
    report('lookup-message', `Job ${id} was rescheduled.`);
  } catch (error) {
    if (error instanceof ApiError && error.code === 'JOB_RUNNING')
      report('lookup-message', `Job ${id} is running: it cannot be rescheduled now.`, 'warn');
    else report('lookup-message', `Reschedule failed: ${describe(error)}`, 'error');
  }
  page.refresh();
}

/** '1500' -> 1500 (ms); '30s', '1h30m' -> as typed (the server parses durations). */
function parseDelay(text) {
  const trimmed = text.trim();
  return /^\d+$/.test(trimmed) ? Number(trimmed) : trimmed;
}

// Add a job

async function addJob(event) {
  event.preventDefault();
  const queue = byId('add-queue').value.trim();
  let payload;
  try {
    payload = JSON.parse(byId('add-payload').value);
  } catch (error) {
    report('add-result', `The payload is not valid JSON: ${describe(error)}`, 'error');
    return;
  }
  const body = { payload };
  const delay = byId('add-delay').value.trim();
  if (delay) body.delay = parseDelay(delay);
  const id = byId('add-id').value.trim();
  if (id) body.id = id;
  try {
    const result = await api('POST', `${queuePath(queue)}/jobs`, body);
    const node = byId('add-result');
    node.dataset.kind = 'ok';
    node.replaceChildren(`Added to ${queue}: `, queue === page.queue() ? jobLink(result.id) : el('code', { textContent: result.id }));
    byId('add-id').value = '';
  } catch (error) {
    report('add-result', `Not added: ${describe(error)}`, 'error');
    return;
  }
  if (!page.queue()) page.select(queue);
  else page.refresh();
}
