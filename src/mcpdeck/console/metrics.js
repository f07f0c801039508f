// Metrics: per server (and replica, when several share the store), the last hour of tool calls a minute
// at a time: calls, p50/p99 latency and errors, as small uPlot charts, live. The figures are the ones
// /metrics gives Prometheus, rolled up per minute by each replica and kept in the store (GET /api/metrics).
// uPlot (MIT, pinned in package.json) is a plain file of this folder: loaded once, no build step.
import { get, on } from './api.js';
import { add, breakable, clear, h } from './dom.js';

export default { title: 'Metrics', mount };

const REFRESH_MS = 5000; // another replica's calls (in the store within 2 s) and a new minute show up without an event here
let loading = null;

/** uPlot's script and styles, added to the page once. */
function loadUPlot() {
  if (window.uPlot) return Promise.resolve(window.uPlot);
  if (!loading) {
    loading = new Promise((resolve, reject) => {
      document.head.append(h('link', { attrs: { rel: 'stylesheet', href: '/console/uPlot.min.css' } }));
      const script = h('script', { src: '/console/uPlot.iife.min.js' });
      script.addEventListener('load', () => resolve(window.uPlot));
      script.addEventListener('error', () => { loading = null; reject(new Error('the chart library did not load')); });
      document.head.append(script);
    });
  }
  return loading;
}

function color(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

const ms = (seconds) => (seconds === null || seconds === undefined ? null : seconds * 1000);
const sum = (values) => values.reduce((total, v) => total + v, 0);
const lastOf = (values) => { for (let i = values.length - 1; i >= 0; i -= 1) if (values[i] !== null) return values[i]; return null; };

function formatMs(value) {
  if (value === null) return '–';
  return value < 10 ? `${value.toFixed(1)} ms` : `${Math.round(value)} ms`;
}

function chartOptions(title, width, series, yLabel) {
  const muted = color('--muted');
  const grid = { stroke: color('--border'), width: 1 };
  const axis = { stroke: muted, grid, ticks: grid, font: '11px system-ui, sans-serif' };
  return {
    title,
    width,
    height: 130,
    legend: { show: true, live: true },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true }, y: { range: (_, min, max) => [0, Math.max(max || 0, 1)] } },
    axes: [{ ...axis, space: 60 }, { ...axis, size: 44, label: yLabel, labelSize: 14, labelFont: '11px system-ui, sans-serif' }],
    series: [{}, ...series],
  };
}

function card(series, minutes, UPlot, width, fleet) {
  const calls = sum(series.calls);
  const errors = sum(series.errors);
  const p50 = series.p50.map(ms);
  const p99 = series.p99.map(ms);
  const who = fleet && series.replica ? [' ', h('span', { class: 'badge' }, `replica ${series.replica}`)] : [];
  const head = h('div', { class: 'card-head' },
    h('h2', {}, breakable(series.server)), who,
    h('span', { class: 'metric-totals muted' },
      `${calls} call${calls === 1 ? '' : 's'} · ${errors} error${errors === 1 ? '' : 's'} · p50 ${formatMs(lastOf(p50))} · p99 ${formatMs(lastOf(p99))} (last minute with calls)`));
  const charts = h('div', { class: 'metric-charts' });
  const el = h('section', { class: 'metric-card', data: { server: series.server, replica: series.replica || '' }, 'aria-label': `Metrics of ${series.server}` }, head, charts);
  const x = minutes;
  const bars = UPlot.paths.bars({ size: [0.7, 8] }); // a count per minute: one bar each
  const point = { show: true, size: 5 }; // a minute alone (no neighbour to draw a line to) still shows
  const chart = (kind) => add(charts, h('div', { class: 'metric-chart', data: { chart: kind } })).lastChild;
  const plots = [
    new UPlot(chartOptions('Calls / min', width, [
      { label: 'calls', stroke: color('--accent'), fill: color('--accent'), paths: bars, points: { show: false } },
    ], 'calls'), [x, series.calls], chart('calls')),
    new UPlot(chartOptions('Latency (ms)', width, [
      { label: 'p50', stroke: color('--ok'), width: 1.5, points: point },
      { label: 'p99', stroke: color('--warn'), width: 1.5, points: point },
    ], 'ms'), [x, p50, p99], chart('latency')),
    new UPlot(chartOptions('Errors / min', width, [
      { label: 'errors', stroke: color('--bad'), fill: color('--bad'), paths: bars, points: { show: false } },
    ], 'errors'), [x, series.errors], chart('errors')),
  ];
  return { el, plots };
}

function mount(root) {
  const status = h('span', { class: 'muted', 'aria-live': 'polite' });
  const body = h('div', { class: 'metric-cards' });
  add(root,
    h('div', { class: 'page-head' }, h('h1', {}, 'Metrics'), status),
    h('p', { class: 'hint' }, 'Tool calls a minute at a time over the last hour, by server, and by replica when several ',
      'mcpdeck serve share this store: the figures ', h('code', {}, '/metrics'),
      ' gives Prometheus. Live: a chart moves as calls end (another replica\'s within a few seconds).'),
    body);
  let plots = [];
  let stopped = false;
  let pending = null;

  function chartWidth() {
    const room = body.clientWidth || root.clientWidth || 900;
    return Math.max(220, Math.floor((room - 48) / 3));
  }

  async function load() {
    pending = null;
    let data;
    let UPlot;
    try {
      [data, UPlot] = await Promise.all([get('/metrics'), loadUPlot()]);
    } catch (error) {
      if (!stopped) status.textContent = error.message;
      return;
    }
    if (stopped) return;
    for (const plot of plots) plot.destroy();
    plots = [];
    clear(body);
    status.textContent = `updated ${new Date().toLocaleTimeString()}`;
    if (!data.series.length) {
      add(body, h('section', { class: 'empty' }, h('p', {}, 'No tool calls in the last hour yet.'),
        h('p', { class: 'muted' }, 'Call a tool (the Tools page, a chat, or a client of the gateway) and it shows here.')));
      return;
    }
    const width = chartWidth();
    const fleet = new Set(data.series.map((series) => series.replica)).size > 1;
    for (const series of data.series) {
      const made = card(series, data.minutes, UPlot, width, fleet);
      add(body, made.el);
      plots.push(...made.plots);
    }
  }

  function soon() {
    if (!pending) pending = setTimeout(load, 1000); // calls ending in a burst: one reload
  }

  const offFinished = on('ToolCallFinished', soon);
  const offOpen = on('open', soon);
  const timer = setInterval(load, REFRESH_MS);
  load();
  return () => {
    stopped = true;
    offFinished();
    offOpen();
    clearInterval(timer);
    clearTimeout(pending);
    for (const plot of plots) plot.destroy();
  };
}
