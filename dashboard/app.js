// The sandglass dashboard: plain DOM, ES modules, no framework, no build step.
//
// Safety rules every module keeps (the page shows job data written by anyone who can add a job):
// - every queue name, job id, payload and error text reaches the page through `textContent` or a
//   DOM property, never through `innerHTML` or an HTML string;
// - reads are GETs; state changes are POST/DELETE calls made from a button or form, with the token;
// - the server's CSP forbids inline scripts and styles: sizes are set through `element.style`
//   (CSSOM, which the CSP allows), never through a `style` attribute.
//
// This module owns the refresh loop, the queue list, the selected queue's counts, the section
// navigation and the line that says which Redis and prefix the page shows.
import { ApiError, api, describe, hasToken, queuePath, setToken, whenUnauthorized } from './api.js';
import { browseFailed, browseRead, connectBrowsePanel, renderBrowse, resetBrowsePanel } from './browse.js';
import { TIMELINE_BOUNDS_MS, renderActivity, renderTimeline } from './charts.js';
import { byId, clip, clock, el, fmtCount, report, setIfChanged, setText, syncList } from './dom.js';
import { connectFlowPanel, keepsCompleted, renderCompleted, renderFlow, resetFlowPanel } from './flow.js';
import { connectGroupsPanel, groupsRead, hasGroups, renderGroupLimits, renderGroups, resetGroupsPanel } from './groups.js';
import { connectJobPanels, renderActive, renderDead, resetJobPanels } from './jobs.js';
import { connectSchedulesPanel, renderSchedules, resetSchedulesPanel } from './schedules.js';

const POLL_MS = 1500;
const HIDDEN_POLL_MS = 5000;
const LIST_LIMIT = 50;
const STATES = ['delayed', 'ready', 'active', 'dead'];
/** The counts of the selected queue's cards: the states, and `limited` (part of ready) and `completed` (kept). */
const CARDS = [...STATES, 'limited', 'completed'];

const state = {
  /** @type {string | null} The selected queue, also kept in the URL as `?queue=`. */
  queue: new URLSearchParams(location.search).get('queue'),
  /** Set on a 401: polling stops until a token is entered. */
  needsToken: false,
  polling: false,
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  timer: undefined,
  /** How far back the activity charts look, and the last activity read (to redraw at once). */
  activityRangeMs: 60_000,
  activity: null,
  /** What /v1/info answered: the Redis and prefix shown, and what the token may do; read again for a new token. */
  info: null,
};

// Banner, live indicator, token

/** Shows the banner: a headline, and optionally the server's own words under it. */
function showBanner(headline, kind = 'error', detail = '') {
  const banner = byId('banner');
  banner.replaceChildren(el('strong', { textContent: headline }));
  if (detail) banner.append(el('span', { className: 'banner-detail', textContent: clip(detail, 400) }));
  banner.dataset.kind = kind;
  banner.hidden = false;
}

const hideBanner = () => {
  byId('banner').hidden = true;
};

/** The server or Redis is away: panels keep their last content, dimmed, rather than an error each. */
const isOutage = error => error instanceof ApiError && (error.status === 0 || error.status >= 500);

/** A failed read, on the banner. */
function reportReadFailure(error) {
  if (error instanceof ApiError && error.code === 'REDIS_UNAVAILABLE')
    showBanner('Redis is unavailable. The counts below are the last ones read; the dashboard keeps retrying.', 'error', error.message);
  else if (error instanceof ApiError && error.status === 0)
    showBanner('The sandglass server does not answer. The dashboard keeps retrying.', 'error', error.message);
  else showBanner(`The server answered ${error instanceof ApiError ? error.status : 'with an error'}.`, 'error', describe(error));
}

function setLive(kind, text) {
  const live = byId('live');
  live.dataset.state = kind;
  live.textContent = text;
}

whenUnauthorized(() => {
  if (state.needsToken) return;
  state.needsToken = true;
  byId('token-form').hidden = false;
  showBanner(hasToken() ? 'The server refused this token: enter the right one.' : 'This server needs an API token.', 'warn');
  setLive('error', 'token needed');
  if (byId('queues-body').children.length === 0) setText('queues-state', 'Enter the API token to see the queues.');
  byId('token-input').focus();
});

function saveToken(event) {
  event.preventDefault();
  const input = byId('token-input');
  setToken(input.value.trim());
  input.value = '';
  state.info = null; // another token may do other things
  state.needsToken = false;
  byId('token-form').hidden = true;
  hideBanner();
  void loadInfo();
  void refreshNow();
}

// Refresh loop

function schedule() {
  clearTimeout(state.timer);
  state.timer = setTimeout(() => void poll(), document.hidden ? HIDDEN_POLL_MS : POLL_MS);
}

/** One refresh of everything on screen; never two at once. Stops while a token is needed. */
async function poll() {
  if (state.polling || state.needsToken) return;
  state.polling = true;
  try {
    const queue = state.queue;
    const reads = [api('GET', '/v1/queues')];
    if (queue) {
      const path = queuePath(queue);
      reads.push(
        api('GET', path),
        api('GET', `${path}/timeline?bounds=${TIMELINE_BOUNDS_MS.join(',')}`),
        api('GET', `${path}/activity`),
        api('GET', `${path}/jobs?state=active&limit=${LIST_LIMIT}`),
        api('GET', `${path}/jobs?state=dead&limit=${LIST_LIMIT}`),
        api('GET', `${path}/schedules`),
        api('GET', `${path}/limits`),
        api('GET', `${path}/retention`),
        // Completed jobs are read only while the queue keeps them (known from the last retention read).
        keepsCompleted() ? api('GET', `${path}/jobs?state=completed&limit=${LIST_LIMIT}`) : Promise.resolve({ jobs: [] }),
      );
      // The job browser's page on screen, read again (its key tells whether the user moved on meanwhile).
      const browse = browseRead();
      reads.push(browse ? api('GET', browse.path).then(answer => ({ key: browse.key, answer })) : Promise.resolve(null));
      // The groups loaded so far (their key tells whether more were loaded meanwhile), and the
      // default group limits only once the queue is known to have groups.
      const groups = groupsRead();
      reads.push(
        groups ? api('GET', groups.path).then(answer => ({ key: groups.key, answer })) : Promise.resolve(null),
        hasGroups() ? api('GET', `${path}/group-limits`) : Promise.resolve(undefined),
      );
    }
    const [list, ...details] = await Promise.allSettled(reads);
    if (state.needsToken) return;
    const failure = [list, ...details].find(result => result.status === 'rejected');
    const outage = failure !== undefined && isOutage(failure.reason);
    document.body.classList.toggle('stale', outage);
    if (failure) {
      reportReadFailure(failure.reason);
      setLive('error', outage ? 'offline' : 'error');
    } else {
      hideBanner();
      setLive('ok', `live · ${new Date().toLocaleTimeString('en-GB')}`);
    }
    if (list.status === 'fulfilled') renderQueues(list.value?.queues ?? []);
    else if (byId('queues-body').children.length === 0) setText('queues-state', 'Could not load the queues (see above).');
    if (queue && queue === state.queue) renderDetail(details);
  } finally {
    state.polling = false;
    if (!state.needsToken) schedule();
  }
}

/** Refreshes at once (after an action), waiting for a refresh in flight to finish first. */
async function refreshNow() {
  while (state.polling) await new Promise(resolve => setTimeout(resolve, 20));
  await poll();
}

// Queue list

function renderQueues(queues) {
  syncList(
    byId('queues-body'),
    queues,
    item => item.name,
    item => {
      const row = el('tr', { tabIndex: 0 });
      row.append(
        el(
          'th',
          { scope: 'row' },
          el('span', { className: 'queue-name' }),
          el('span', { className: 'badge badge-paused', textContent: 'paused' }),
        ),
      );
      for (const name of STATES) row.append(el('td', { className: `num count-${name}` }));
      row.addEventListener('click', () => selectQueue(item.name));
      row.addEventListener('keydown', event => {
        if (event.key !== 'Enter' && event.key !== ' ') return;
        event.preventDefault();
        selectQueue(item.name);
      });
      return row;
    },
    (row, item) => {
      setIfChanged(row.querySelector('.queue-name'), item.name);
      row.querySelector('.badge').hidden = !item.stats?.paused;
      for (const name of STATES) {
        const cell = row.querySelector(`.count-${name}`);
        setIfChanged(cell, fmtCount(item.stats?.[name]));
        cell.classList.toggle('zero', !item.stats?.[name]);
      }
      markSelected(row);
    },
  );
  byId('queue-names').replaceChildren(...queues.map(item => el('option', { value: item.name })));
  byId('queues-state').hidden = queues.length > 0;
  if (queues.length === 0) setText('queues-state', 'No queues yet. Add a job to create one.');
  if (!state.queue && queues.length > 0) selectQueue(queues[0].name);
}

function markSelected(row) {
  const selected = row.dataset.key === state.queue;
  row.classList.toggle('selected', selected);
  row.setAttribute('aria-selected', String(selected));
}

function selectQueue(name) {
  if (name === state.queue && !byId('detail').hidden) return;
  state.queue = name;
  const url = new URL(location.href);
  url.searchParams.set('queue', name);
  history.replaceState(null, '', url.pathname + url.search);
  for (const row of byId('queues-body').children) markSelected(row);
  byId('empty-detail').hidden = true;
  byId('detail').hidden = false;
  byId('queue-title').textContent = name;
  setText('lookup-queue', `in ${name}`);
  byId('add-queue').value = name;
  for (const name of CARDS) setText(`count-${name}`, '–');
  setText('totals', '');
  byId('timeline').replaceChildren(el('p', { className: 'state loading', textContent: 'Loading…' }));
  byId('activity').replaceChildren(el('p', { className: 'state loading', textContent: 'Loading…' }));
  state.activity = null;
  resetJobPanels();
  resetBrowsePanel();
  resetSchedulesPanel();
  resetFlowPanel();
  resetGroupsPanel();
  void refreshNow();
}

// The selected queue

function renderDetail([info, timeline, activity, active, dead, schedules, limits, retention, completed, browse, groups, groupLimits]) {
  if (timeline.status === 'fulfilled' && typeof timeline.value?.now === 'number') clock.offsetMs = timeline.value.now - Date.now();
  if (info.status === 'fulfilled') renderStats(info.value);
  // A panel whose read failed keeps what it showed, unless it showed nothing yet or the failure is
  // about this read (not an outage, which the banner reports once).
  const failed = (container, what, result) => {
    if (isOutage(result.reason) && !container.querySelector('.loading')) return;
    container.replaceChildren(
      el('p', {
        className: 'state error',
        textContent: `Could not load ${what}: ${isOutage(result.reason) ? 'see above' : describe(result.reason)}.`,
      }),
    );
  };
  if (timeline.status === 'fulfilled') renderTimeline(byId('timeline'), timeline.value);
  else failed(byId('timeline'), 'the timeline', timeline);
  if (activity.status === 'fulfilled') {
    state.activity = activity.value;
    renderActivity(byId('activity'), activity.value, state.activityRangeMs);
  } else failed(byId('activity'), 'the activity', activity);
  if (active.status === 'fulfilled') renderActive(active.value?.jobs ?? []);
  else if (!isOutage(active.reason)) setText('active-state', `Could not load the active jobs: ${describe(active.reason)}`);
  if (dead.status === 'fulfilled') renderDead(dead.value?.jobs ?? [], info.status === 'fulfilled' ? info.value?.stats?.dead : undefined);
  else if (!isOutage(dead.reason)) setText('dead-state', `Could not load the dead letters: ${describe(dead.reason)}`);
  if (schedules.status === 'fulfilled') renderSchedules(schedules.value?.schedules ?? []);
  else if (!isOutage(schedules.reason)) {
    byId('schedules-state').hidden = false;
    setText('schedules-state', `Could not load the schedules: ${describe(schedules.reason)}`);
  }
  // Each half of the panel keeps what it showed when its read fails.
  renderFlow(limits.status === 'fulfilled' ? limits.value : undefined, retention.status === 'fulfilled' ? retention.value : undefined);
  const flowFailure = [limits, retention].find(result => result.status === 'rejected');
  if (flowFailure && !isOutage(flowFailure.reason))
    setText('flow-result', `Could not load the limits and retention: ${describe(flowFailure.reason)}`);
  if (completed.status === 'fulfilled')
    renderCompleted(completed.value?.jobs ?? [], info.status === 'fulfilled' ? info.value?.stats?.completed : undefined);
  document.querySelector('.nav-link[data-target="completed-panel"]').hidden = byId('completed-panel').hidden;
  if (browse.status === 'fulfilled' && browse.value) renderBrowse(browse.value.key, browse.value.answer);
  else if (browse.status === 'rejected' && !isOutage(browse.reason)) browseFailed(browse.reason);
  if (groups.status === 'fulfilled' && groups.value) renderGroups(groups.value.key, groups.value.answer);
  else if (groups.status === 'rejected' && hasGroups() && !isOutage(groups.reason))
    report('groups-result', `Could not load the groups: ${describe(groups.reason)}`, 'error');
  if (groupLimits.status === 'fulfilled' && groupLimits.value !== undefined) renderGroupLimits(groupLimits.value);
}

function renderStats(info) {
  const stats = info?.stats ?? {};
  for (const name of CARDS) setText(`count-${name}`, fmtCount(stats[name]));
  byId('card-completed').hidden = !keepsCompleted() && !stats.completed;
  byId('paused-badge').hidden = !stats.paused;
  setText('pause-button', stats.paused ? 'Resume' : 'Pause');
  byId('pause-button').dataset.paused = String(Boolean(stats.paused));
  const c = info?.counters;
  setText(
    'totals',
    c
      ? `Since the queue was first used: ${fmtCount(c.added)} added · ${fmtCount(c.completed)} completed · ${fmtCount(c.retried)} retried · ${fmtCount(c.dead)} dead-lettered · ${fmtCount(c.expired)} expired · ${fmtCount(c.reaped)} leases reaped`
      : '',
  );
}

async function togglePause() {
  const paused = byId('pause-button').dataset.paused === 'true';
  try {
    await api('POST', `${queuePath(state.queue)}/${paused ? 'resume' : 'pause'}`, {});
  } catch (error) {
    showBanner(`Could not ${paused ? 'resume' : 'pause'} the queue.`, 'error', describe(error));
  }
  void refreshNow();
}

// Which Redis and prefix

/** Reads /v1/info once (again after a token is entered, until it answers) and shows it in the top bar. */
async function loadInfo() {
  if (state.info) return;
  try {
    state.info = await api('GET', '/v1/info');
  } catch {
    return; // 401 asks for the token; an older server without /v1/info: the line stays hidden.
  }
  const redis = state.info?.redis ?? {};
  const nodes = Array.isArray(redis.nodes) ? redis.nodes.map(String) : [];
  const shown = nodes.length > 3 ? `${nodes.slice(0, 3).join(', ')} +${nodes.length - 3} more` : nodes.join(', ');
  setText('redis-nodes', shown);
  byId('redis-nodes').title = nodes.join('\n');
  const details = [String(redis.mode ?? 'single')];
  if (redis.mode === 'sentinel') details.push(`master ${String(redis.name ?? '')}`);
  if (typeof redis.db === 'number' && redis.db !== 0) details.push(`db ${redis.db}`);
  if (redis.tls) details.push('TLS');
  setText('redis-mode', `(${details.join(' · ')})`);
  setText('redis-prefix', String(state.info?.prefix ?? ''));
  byId('redis-info').title = `sandglass ${String(state.info?.version ?? '')}`;
  byId('redis-info').hidden = false;
  showAccess(state.info?.access);
}

/**
 * What the token may do, on the page: the body's `data-scopes` hides every control whose
 * `data-needs` scope the token lacks (style.css), and the top bar names the token and its scopes.
 * Before /v1/info answers (or from a server without `access`) nothing is hidden: the server refuses
 * what the token may not do anyway (403 FORBIDDEN_SCOPE).
 */
function showAccess(access) {
  const line = byId('access');
  if (!access || !Array.isArray(access.scopes)) {
    delete document.body.dataset.scopes;
    line.hidden = true;
    return;
  }
  document.body.dataset.scopes = access.scopes.join(' ');
  if (access.name === null) {
    line.hidden = true; // no token: the service is open (loopback only)
    return;
  }
  const scopes = access.scopes.map(String);
  const queues = Array.isArray(access.queues) ? access.queues.map(String) : ['*'];
  const what = scopes.includes('admin') ? 'admin' : scopes.length === 1 && scopes[0] === 'read' ? 'read-only' : scopes.join(', ');
  const where = queues.includes('*') ? '' : ` · queues ${queues.join(', ')}`;
  line.textContent = `${what} token: ${String(access.name)}${where}`;
  line.dataset.scopes = scopes.join(' ');
  line.title = `The token "${String(access.name)}" has ${scopes.join(', ')} on ${queues.join(', ')}; what it may not do is hidden.`;
  line.hidden = false;
}

// Start

connectJobPanels({ queue: () => state.queue, refresh: () => void refreshNow(), select: selectQueue });
connectSchedulesPanel({ queue: () => state.queue, refresh: () => void refreshNow() });
connectFlowPanel({ queue: () => state.queue, refresh: () => void refreshNow() });
connectBrowsePanel({ queue: () => state.queue, refresh: () => void refreshNow() });
connectGroupsPanel({ queue: () => state.queue, refresh: () => void refreshNow() });
for (const link of document.querySelectorAll('button.nav-link')) {
  link.addEventListener('click', () => byId(link.dataset.target).scrollIntoView({ block: 'start' }));
}
byId('token-form').addEventListener('submit', saveToken);
byId('token-button').addEventListener('click', () => {
  const form = byId('token-form');
  form.hidden = !form.hidden;
  if (!form.hidden) byId('token-input').focus();
});
byId('pause-button').addEventListener('click', () => void togglePause());
for (const button of document.querySelectorAll('button.range')) {
  button.addEventListener('click', () => {
    state.activityRangeMs = Number(button.dataset.rangeMs);
    for (const other of document.querySelectorAll('button.range')) other.setAttribute('aria-pressed', String(other === button));
    if (state.activity) renderActivity(byId('activity'), state.activity, state.activityRangeMs);
  });
}
document.addEventListener('visibilitychange', () => {
  if (!document.hidden) void refreshNow();
});

void loadInfo();
if (state.queue) selectQueue(state.queue);
else void poll();
