// The charts of one queue: when waiting jobs fall due, and throughput and lateness. Plain DOM bars
// and SVG built with DOM calls; widths go through `element.style` (CSSOM), which the CSP allows.
import { el, fmtCount, fmtDuration, fmtRate, svg } from './dom.js';

/** Timeline windows, in ms from now: next minute, 10 minutes, hour, day, week (then "later"). */
export const TIMELINE_BOUNDS_MS = [60_000, 600_000, 3_600_000, 86_400_000, 604_800_000];
const BUCKET_LABELS = ['within 1 min', '1–10 min', '10 min – 1 h', '1 h – 1 day', '1 day – 1 week'];

/** The due-time histogram of `GET .../timeline` as horizontal bars. */
export function renderTimeline(container, data) {
  const rows = [
    { label: 'due now', count: Number(data?.ready ?? 0), kind: 'ready' },
    ...(data?.buckets ?? []).map((bucket, i) => ({
      label: BUCKET_LABELS[i] ?? `within ${fmtDuration(bucket.untilMs)}`,
      count: Number(bucket.count ?? 0),
      kind: 'delayed',
    })),
    { label: 'later', count: Number(data?.later ?? 0), kind: 'delayed' },
  ];
  const max = Math.max(0, ...rows.map(row => row.count));
  if (max === 0) {
    container.replaceChildren(el('p', { className: 'state', textContent: 'Nothing is waiting in this queue.' }));
    return;
  }
  const list = el('ol', { className: 'bars' });
  for (const row of rows) {
    const fill = el('span', { className: `bar-fill bar-${row.kind}` });
    // At least a sliver for a non-zero count, so one job among thousands still shows.
    fill.style.width = row.count === 0 ? '0' : `${Math.max(1.5, (row.count / max) * 100)}%`;
    list.append(
      el(
        'li',
        { className: 'bar-row' },
        el('span', { className: 'bar-label', textContent: row.label }),
        el('span', { className: 'bar-track' }, fill),
        el('span', { className: 'bar-count', textContent: fmtCount(row.count) }),
      ),
    );
  }
  container.replaceChildren(list);
}

// Throughput and lateness

/** Bars per chart at most: the activity's points (one per second) are grouped to fit. */
const MAX_BARS = 60;
const isNumber = v => typeof v === 'number' && Number.isFinite(v);

/**
 * Groups consecutive points into at most MAX_BARS bars: counts add up; for lateness a bar keeps
 * the worst p99 and p50 of its points (a percentile of percentiles would not be one anyway).
 */
function group(points, stepMs) {
  const size = Math.max(1, Math.ceil(points.length / MAX_BARS));
  const bars = [];
  for (let start = 0; start < points.length; start += size) {
    const slice = points.slice(start, start + size);
    const worst = key => {
      const values = slice.map(p => p[key]).filter(isNumber);
      return values.length ? Math.max(...values) : null;
    };
    bars.push({
      delivered: slice.reduce((sum, p) => sum + Number(p.delivered ?? 0), 0),
      failed: slice.reduce((sum, p) => sum + Number(p.failed ?? 0), 0),
      p50: worst('latenessP50Ms'),
      p99: worst('latenessP99Ms'),
    });
  }
  return { bars, barMs: size * stepMs };
}

/**
 * `GET .../activity` over its last `rangeMs` (the server keeps 5 minutes, one point per second) as
 * figures and two small bar charts: throughput and lateness.
 */
export function renderActivity(container, data, rangeMs) {
  const all = Array.isArray(data?.points) ? data.points : [];
  const newest = all.length ? Number(all[all.length - 1].at) : 0;
  const points = all.filter(p => Number(p.at) > newest - rangeMs);
  const spanMs = Math.min(rangeMs, Number(data?.windowMs ?? rangeMs));
  const delivered = points.reduce((sum, p) => sum + Number(p.delivered ?? 0), 0);
  const failed = points.reduce((sum, p) => sum + Number(p.failed ?? 0), 0);
  if (delivered + failed === 0) {
    container.replaceChildren(
      el('p', {
        className: 'state',
        textContent: `Nothing delivered in the last ${fmtDuration(spanMs)}. This counts the jobs this server handed out (webhooks and pull claims).`,
      }),
    );
    return;
  }
  const stepMs = isNumber(data?.stepMs) ? data.stepMs : points.length > 1 ? Number(points[1].at) - Number(points[0].at) : 1000;
  const { bars, barMs } = group(points, stepMs);
  const worst = key => {
    const values = points.map(p => p[key]).filter(isNumber);
    return values.length ? `${fmtCount(Math.round(Math.max(...values)))} ms` : '–';
  };
  const summary = el(
    'dl',
    { className: 'figures' },
    figure('delivered', fmtCount(delivered)),
    figure('failed attempts', fmtCount(failed)),
    figure('jobs/s, average', fmtRate((delivered * 1000) / Math.max(stepMs, points.length * stepMs))),
    figure('lateness p50, worst', worst('latenessP50Ms')),
    figure('lateness p99, worst', worst('latenessP99Ms')),
  );
  const worstRate = Math.max(...bars.map(b => (b.delivered * 1000) / barMs));
  const worstP99 = Math.max(0, ...bars.map(b => b.p99 ?? 0));
  container.replaceChildren(
    summary,
    chart('Jobs delivered per second (failed attempts in red)', barChart(bars, barMs), `${fmtRate(worstRate)}/s`, spanMs),
    chart(
      'Lateness, start minus due time: p99 (light) and p50',
      latenessChart(bars),
      worstP99 ? `${fmtCount(Math.ceil(worstP99))} ms` : '',
      spanMs,
    ),
  );
}

function figure(label, value) {
  return el('div', { className: 'figure' }, el('dt', { textContent: label }), el('dd', { textContent: value }));
}

function chart(title, graphic, maxLabel, windowMs) {
  return el(
    'figure',
    { className: 'chart' },
    el(
      'figcaption',
      {},
      el('span', { textContent: title }),
      el('span', { className: 'chart-max', textContent: maxLabel ? `max ${maxLabel}` : '' }),
    ),
    graphic,
    el('div', { className: 'chart-axis' }, el('span', { textContent: `${fmtDuration(windowMs)} ago` }), el('span', { textContent: 'now' })),
  );
}

const WIDTH = 300;
const HEIGHT = 60;

function chartSvg(title) {
  const graphic = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: 'none', class: 'chart-svg', role: 'img' });
  graphic.append(svg('title', {}, title));
  return graphic;
}

/** One column per bar, `values` drawn over each other from the bottom (0 draws nothing). */
function columns(graphic, count, index, values) {
  const slot = WIDTH / count;
  for (const [value, max, cls] of values) {
    if (!(value > 0)) continue;
    const height = Math.max(1, (value / max) * HEIGHT);
    graphic.append(
      svg('rect', { x: index * slot + slot * 0.12, y: HEIGHT - height, width: Math.max(0.5, slot * 0.76), height, class: cls }),
    );
  }
}

function barChart(bars, barMs) {
  const graphic = chartSvg(`Jobs delivered and attempts failed per ${fmtDuration(barMs)}`);
  const max = Math.max(1, ...bars.map(b => Math.max(b.delivered, b.failed)));
  bars.forEach((b, i) =>
    columns(graphic, bars.length, i, [
      [b.delivered, max, 'bar-ok'],
      [b.failed, max, 'bar-failed'],
    ]),
  );
  return graphic;
}

function latenessChart(bars) {
  const graphic = chartSvg('Lateness p99 (light) and p50 (dark) in ms');
  const max = Math.max(1, ...bars.map(b => b.p99 ?? 0), ...bars.map(b => b.p50 ?? 0));
  bars.forEach((b, i) =>
    columns(graphic, bars.length, i, [
      [b.p99, max, 'bar-p99'],
      [b.p50, max, 'bar-p50'],
    ]),
  );
  return graphic;
}
