// The schedules panel of one queue: each recurring schedule with its rule, next run, last run and
// counts, its next ticks and settings on expand, and pause, resume and remove buttons. Like every
// module here, it puts the API's values into the page as text only (see app.js).
import { ApiError, api, describe, queuePath } from './api.js';
import { byId, clip, el, fmtCount, fmtPayload, fmtRelative, fmtTime, report, setIfChanged, setText, syncList } from './dom.js';
import { jobLink } from './jobs.js';
import { describeCron, fmtEvery } from './schedule-text.js';

/** Rows drawn at most: the list route has no pages, and a page of thousands of rows helps nobody. */
const MAX_ROWS = 200;
const COLUMNS = 7;

const page = { queue: () => /** @type {string | null} */ (null), refresh: () => undefined };
/** The last schedule read for each row, to fill the details in when a row is opened. */
const latest = new WeakMap();

export function connectSchedulesPanel(context) {
  Object.assign(page, context);
}

/** Forgets what the panel showed (another queue was selected). */
export function resetSchedulesPanel() {
  for (const body of byId('schedules-table').querySelectorAll('tbody')) body.remove();
  byId('schedules-table').hidden = true;
  byId('schedules-state').hidden = false;
  setText('schedules-state', 'Loading…');
  setText('schedules-summary', '');
  setText('schedules-result', '');
}

// Rendering

export function renderSchedules(schedules) {
  const shown = schedules.slice(0, MAX_ROWS);
  const paused = schedules.filter(schedule => schedule.paused).length;
  const summary =
    schedules.length === 0
      ? ''
      : `${fmtCount(schedules.length)} schedule${schedules.length === 1 ? '' : 's'}${paused ? ` · ${fmtCount(paused)} paused` : ''}`;
  setText('schedules-summary', schedules.length > MAX_ROWS ? `${summary} · the first ${MAX_ROWS} by key shown` : summary);
  byId('schedules-table').hidden = schedules.length === 0;
  byId('schedules-state').hidden = schedules.length > 0;
  if (schedules.length === 0)
    setText(
      'schedules-state',
      'No recurring schedules in this queue. Create one with queue.schedule(), sandglass schedule add, or PUT …/schedules/<key>.',
    );
  syncList(byId('schedules-table'), shown, schedule => schedule.key, createRow, updateRow);
}

/** One schedule: a tbody of two rows, the summary and the expandable details under it. */
function createRow(schedule) {
  const body = el('tbody', { className: 'schedule' });
  const toggle = el(
    'button',
    { type: 'button', className: 'expand', title: 'Show the next runs and the settings' },
    el('span', { className: 'expand-mark', ariaHidden: 'true' }),
    el('span', { className: 'schedule-key' }),
  );
  toggle.setAttribute('aria-expanded', 'false');
  const more = el('tr', { className: 'schedule-more', hidden: true });
  toggle.addEventListener('click', () => {
    const open = more.hidden;
    if (open) fillDetails(body, latest.get(body) ?? schedule);
    more.hidden = !open;
    toggle.setAttribute('aria-expanded', String(open));
  });
  const pause = el('button', { type: 'button', className: 'pause' });
  pause.dataset.needs = 'admin';
  pause.addEventListener('click', () => void setPaused(schedule.key, pause.dataset.paused !== 'true'));
  const remove = el('button', { type: 'button', className: 'danger remove', textContent: 'Remove' });
  remove.dataset.needs = 'admin';
  remove.addEventListener('click', () => void removeSchedule(schedule.key, remove));
  body.append(
    el(
      'tr',
      { className: 'schedule-row' },
      el(
        'th',
        { scope: 'row' },
        toggle,
        el('span', { className: 'badge badge-paused', textContent: 'paused' }),
        el('span', { className: 'badge badge-ended', textContent: 'ended' }),
      ),
      el('td', { dataset: { label: 'When' } }, el('span', { className: 'rule' }), el('span', { className: 'sub rule-source' })),
      el('td', { dataset: { label: 'Next run' } }, el('span', { className: 'next' }), el('span', { className: 'sub next-local' })),
      el('td', { dataset: { label: 'Last run' } }, el('span', { className: 'run-state' }), el('span', { className: 'sub last-tick' })),
      el('td', { className: 'num runs', dataset: { label: 'Runs' } }),
      el('td', { className: 'num skipped', dataset: { label: 'Skipped' } }),
      el('td', { className: 'schedule-actions' }, pause, remove),
    ),
    more,
  );
  const details = el('td', { colSpan: COLUMNS });
  details.append(
    el(
      'div',
      { className: 'schedule-details' },
      el('div', {}, el('h4', { textContent: 'Next runs' }), el('ol', { className: 'upcoming' })),
      el('dl', { className: 'fields settings' }),
    ),
    el('h4', { textContent: 'Payload of each run' }),
    el('pre', { className: 'payload' }),
  );
  more.append(details);
  return body;
}

function updateRow(body, schedule) {
  const ended = !schedule.paused && schedule.nextAt === null;
  body.classList.toggle('paused', schedule.paused);
  body.classList.toggle('ended', ended);
  setIfChanged(body.querySelector('.schedule-key'), schedule.key);
  body.querySelector('.badge-paused').hidden = !schedule.paused;
  body.querySelector('.badge-ended').hidden = !ended;

  setIfChanged(body.querySelector('.rule'), ruleText(schedule));
  setIfChanged(
    body.querySelector('.rule-source'),
    typeof schedule.cron === 'string' ? `${schedule.cron} · ${schedule.tz}` : schedule.tz === 'UTC' ? '' : schedule.tz,
  );

  const next = body.querySelector('.next');
  const nextLocal = body.querySelector('.next-local');
  if (typeof schedule.nextAt === 'number') {
    setIfChanged(next, fmtRelative(schedule.nextAt));
    setIfChanged(nextLocal, fmtLocal(schedule.nextAt));
    nextLocal.title = fmtTime(schedule.nextAt);
  } else {
    setIfChanged(next, schedule.paused ? 'paused' : endedText(schedule));
    setIfChanged(nextLocal, '');
    nextLocal.title = '';
  }
  next.classList.toggle('none', schedule.nextAt === null);

  const runState = body.querySelector('.run-state');
  const lastTick = body.querySelector('.last-tick');
  const last = schedule.lastRun;
  if (last && typeof last.tickAt === 'number') {
    setIfChanged(runState, String(last.state));
    runState.className = `run-state run-${String(last.state)}`;
    setIfChanged(lastTick, `tick ${fmtRelative(last.tickAt)}`);
    lastTick.title = `${fmtLocal(last.tickAt)} · ${fmtTime(last.tickAt)}`;
  } else {
    setIfChanged(runState, 'not run yet');
    runState.className = 'run-state none';
    setIfChanged(lastTick, '');
    lastTick.title = '';
  }

  setIfChanged(
    body.querySelector('.runs'),
    typeof schedule.limit === 'number' ? `${fmtCount(schedule.runs)} of ${fmtCount(schedule.limit)}` : fmtCount(schedule.runs),
  );
  const skipped = body.querySelector('.skipped');
  setIfChanged(skipped, fmtCount(schedule.skipped));
  skipped.classList.toggle('zero', !schedule.skipped);

  const pause = body.querySelector('.pause');
  // An ended schedule creates no ticks anyway: there is nothing to pause.
  pause.hidden = ended;
  setIfChanged(pause, schedule.paused ? 'Resume' : 'Pause');
  pause.dataset.paused = String(Boolean(schedule.paused));
  pause.setAttribute('aria-label', `${schedule.paused ? 'Resume' : 'Pause'} schedule ${clip(String(schedule.key), 80)}`);
  const remove = body.querySelector('.remove');
  if (remove.dataset.armed !== 'true') remove.setAttribute('aria-label', `Remove schedule ${clip(String(schedule.key), 80)}`);

  latest.set(body, schedule);
  if (!body.querySelector('.schedule-more').hidden) fillDetails(body, schedule);
}

/** The expanded part: next runs, settings, payload. Drawn when opened, and redrawn while open. */
function fillDetails(body, schedule) {
  const upcoming = Array.isArray(schedule.upcoming) ? schedule.upcoming : [];
  body
    .querySelector('.upcoming')
    .replaceChildren(
      ...(upcoming.length > 0
        ? upcoming.map(at =>
            el(
              'li',
              {},
              el('span', { className: 'when', textContent: fmtLocal(at) }),
              ' · ',
              el('span', { textContent: inZone(at, schedule.tz) }),
              ' · ',
              el('span', { textContent: fmtRelative(at) }),
            ),
          )
        : [el('li', { className: 'muted', textContent: schedule.paused ? 'none while paused' : 'none: the schedule ended' })]),
    );
  const rows = [
    [
      'Rule',
      typeof schedule.cron === 'string' ? `cron ${schedule.cron}` : `every ${fmtEvery(schedule.every)} (${fmtCount(schedule.every)} ms)`,
    ],
    ['Time zone', String(schedule.tz)],
    ['Overlap', schedule.overlap === 'skip' ? 'skip a tick while the last run is active' : 'allow'],
    ['Catch-up', String(schedule.catchUp)],
  ];
  if (typeof schedule.startAt === 'number') rows.push(['Starts', `${fmtLocal(schedule.startAt)} (${fmtRelative(schedule.startAt)})`]);
  if (typeof schedule.endAt === 'number') rows.push(['Ends', `${fmtLocal(schedule.endAt)} (${fmtRelative(schedule.endAt)})`]);
  if (typeof schedule.limit === 'number') rows.push(['Limit', `${fmtCount(schedule.limit)} runs`]);
  if (typeof schedule.maxAttempts === 'number') rows.push(['Attempts', `${fmtCount(schedule.maxAttempts)} per run`]);
  if (schedule.backoff !== undefined) rows.push(['Backoff', fmtPayload(schedule.backoff, 0)]);
  if (typeof schedule.lastTickAt === 'number')
    rows.push(['Last tick started', `${fmtLocal(schedule.lastTickAt)} (${fmtRelative(schedule.lastTickAt)})`]);
  const fields = body.querySelector('.settings');
  fields.replaceChildren();
  for (const [label, value] of rows) fields.append(el('dt', { textContent: label }), el('dd', { textContent: value }));
  if (schedule.lastRun && typeof schedule.lastRun.id === 'string') {
    fields.append(
      el('dt', { textContent: 'Last run' }),
      el(
        'dd',
        {},
        jobLink(schedule.lastRun.id),
        el('span', { className: `run-${String(schedule.lastRun.state)}`, textContent: ` ${String(schedule.lastRun.state)}` }),
      ),
    );
  }
  setIfChanged(body.querySelector('.payload'), fmtPayload(schedule.payload));
}

// Actions

async function setPaused(key, pause) {
  const verb = pause ? 'pause' : 'resume';
  try {
    await api('POST', `${schedulePath(page.queue(), key)}/${verb}`, {});
    report('schedules-result', `Schedule ${key} ${pause ? 'paused' : 'resumed'}.`);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) report('schedules-result', `Schedule ${key} no longer exists.`, 'warn');
    else report('schedules-result', `Could not ${verb} schedule ${key}: ${describe(error)}`, 'error');
  }
  page.refresh();
}

/** Remove asks twice, as purge does: the first click arms the button for a few seconds. */
async function removeSchedule(key, button) {
  if (button.dataset.armed !== 'true') {
    button.dataset.armed = 'true';
    button.textContent = 'Click again to remove';
    setTimeout(() => disarm(button), 4000);
    return;
  }
  disarm(button);
  try {
    await api('DELETE', schedulePath(page.queue(), key));
    report('schedules-result', `Schedule ${key} removed; a run in progress finishes.`);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) report('schedules-result', `Schedule ${key} was already gone.`, 'warn');
    else report('schedules-result', `Could not remove schedule ${key}: ${describe(error)}`, 'error');
  }
  page.refresh();
}

function disarm(button) {
  button.dataset.armed = 'false';
  button.textContent = 'Remove';
}

const schedulePath = (queue, key) => `${queuePath(queue)}/schedules/${encodeURIComponent(key)}`;

// Formatting

/** A schedule's rule in words: 'every 5m', 'every day at 09:00', or the cron pattern itself. */
function ruleText(schedule) {
  if (typeof schedule.cron !== 'string') return `every ${fmtEvery(schedule.every)}`;
  return describeCron(schedule.cron) ?? `cron ${schedule.cron}`;
}

function endedText(schedule) {
  if (typeof schedule.limit === 'number' && schedule.runs >= schedule.limit)
    return schedule.limit === 1 ? 'ended: its one run was made' : `ended: all ${fmtCount(schedule.limit)} runs were made`;
  if (typeof schedule.endAt === 'number') return `ended ${fmtRelative(schedule.endAt)}`;
  return 'ended';
}

const browserZone = new Intl.DateTimeFormat().resolvedOptions().timeZone;
/** Local formats by [with year, with seconds]. */
const LOCAL = [false, true].map(year =>
  [false, true].map(
    seconds =>
      new Intl.DateTimeFormat('en-GB', {
        weekday: 'short',
        day: 'numeric',
        month: 'short',
        ...(year ? { year: 'numeric' } : {}),
        hour: '2-digit',
        minute: '2-digit',
        ...(seconds ? { second: '2-digit' } : {}),
      }),
  ),
);

/** An instant in this browser's time zone: the year only when it is not this one, seconds only when not on a whole minute. */
function fmtLocal(at) {
  const date = new Date(at);
  const format = LOCAL[Number(date.getFullYear() !== new Date().getFullYear())]?.[Number(at % 60_000 !== 0)];
  return `${format?.format(date) ?? fmtTime(at)} local`;
}

/** An instant as a wall clock in the schedule's time zone ('09:00 Europe/Berlin'). */
function inZone(at, tz) {
  try {
    const time = new Intl.DateTimeFormat('en-GB', {
      timeZone: tz,
      hour: '2-digit',
      minute: '2-digit',
      ...(at % 60_000 === 0 ? {} : { second: '2-digit' }),
      ...(tz === browserZone ? {} : { weekday: 'short' }),
    }).format(new Date(at));
    return `${time} ${tz}`;
  } catch {
    return fmtTime(at); // a zone this browser does not know
  }
}
