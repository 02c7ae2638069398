// The job page's tables, one function per section of a jobview.Job. Each
// returns a fresh element for the section's body; the page swaps it in on
// every sample. Rows carry a data-testid, and their cells data-col (the
// jobview JSON field shown), for tests.

import { h, table, num, cell, badge } from './dom.js';
import * as f from './format.js';

const list = (x) => (Array.isArray(x) ? x : []);
const wmCell = (col, ms) => num(col, f.watermark(ms), f.watermarkTitle(ms));

// subtasks lists every subtask of every stage, or of the selected stage.
export function subtasks(job, selected) {
  const cols = [['Stage'], ['#', 'num'], ['In', 'num'], ['Out', 'num'], ['In/s', 'num'], ['Out/s', 'num'],
    ['Input WM', 'num'], ['Output WM', 'num'], ['Lag', 'num'], ['Busy', 'num'], ['Idle', 'num'],
    ['Backpr.', 'num'], ['Queue', 'num']];
  const rows = [];
  for (const st of list(job.stages)) {
    if (selected && st.name !== selected) continue;
    for (const t of list(st.subtasks)) {
      rows.push(h('tr', { testid: 'subtask-row', 'data-stage-name': st.name, 'data-subtask': t.index },
        cell('stage', st.name, { class: 'name' }),
        num('index', t.index),
        num('elementsIn', f.count(t.elementsIn)),
        num('elementsOut', f.count(t.elementsOut)),
        num('elementsInPerSecond', f.rate(t.elementsInPerSecond)),
        num('elementsOutPerSecond', f.rate(t.elementsOutPerSecond)),
        wmCell('inputWatermark', t.inputWatermark),
        outWMCell(t),
        num('watermarkLagSeconds', f.lag(t.watermarkLagSeconds, t.outputWatermark)),
        num('busyRatio', f.percent(t.busyRatio)),
        num('idleRatio', f.percent(t.idleRatio)),
        num('backpressuredRatio', f.percent(t.backpressuredRatio), null),
        queueCell(t)));
    }
  }
  return table(cols, rows, selected ? `No subtasks of ${selected}.` : 'No subtasks.', { class: 'subtasks' });
}

// outWMCell is a subtask's output watermark, marked idle when the subtask
// told its consumers so: it then holds none of them back.
function outWMCell(t) {
  const td = wmCell('outputWatermark', t.outputWatermark);
  if (t.watermarkIdle) {
    td.append(' ', badge('idle', 'muted', 'watermark-idle'));
    td.title = `${td.title || ''} (idle: holds no consumer back)`.trim();
  }
  return td;
}

function queueCell(t) {
  const cap = t.queueCapacity > 0 ? t.queueCapacity : 0;
  const share = cap ? Math.min(1, Math.max(0, t.queueDepth / cap)) : 0;
  const meter = h('meter', { min: 0, max: 1, value: share, low: 0.5, high: 0.9, optimum: 0 });
  return h('td', { class: 'num', 'data-col': 'queueDepth' }, `${t.queueDepth}/${cap || f.DASH} `, meter);
}

export function partitions(job) {
  const cols = [['Source'], ['Topic'], ['Partition', 'num'], ['Subtask', 'num'], ['Watermark', 'num'],
    ['Next offset', 'num'], ['Lag (records)', 'num'], ['Lag (s)', 'num'], ['Paused'], ['Idle']];
  const rows = list(job.partitions).map((p) =>
    h('tr', { testid: 'partition-row', 'data-topic': p.topic, 'data-partition': p.partition },
      cell('source', p.source, { class: 'name' }),
      cell('topic', p.topic, { class: 'mono' }),
      num('partition', p.partition),
      num('subtask', p.subtask),
      wmCell('watermark', p.watermark),
      num('next', p.next),
      num('lag', p.lag < 0 ? '?' : f.count(p.lag), p.lag < 0 ? 'high watermark not known yet' : String(p.lag)),
      num('lagSeconds', f.seconds(p.lagSeconds)),
      cell('paused', p.paused ? badge('paused', 'warn') : ''),
      cell('idle', p.idle ? badge('idle', 'muted') : '')));
  return table(cols, rows, 'No Kafka partitions.', { class: 'partitions' });
}

export function alignment(job) {
  const cols = [['Group'], ['Bound', 'num'], ['Spread', 'num'], ['Paused splits', 'num']];
  const rows = list(job.alignment).map((a) =>
    h('tr', { testid: 'alignment-row', 'data-group': a.group },
      cell('group', a.group, { class: 'name' }),
      num('bound', a.bound >= f.MAX_WATERMARK ? 'none held back' : f.watermark(a.bound), f.watermarkTitle(a.bound)),
      num('spreadSeconds', f.seconds(a.spreadSeconds)),
      num('paused', a.paused)));
  return table(cols, rows, 'No watermark alignment groups.', { class: 'alignment' });
}

export function checkpointSummary(job) {
  const c = job.checkpoints || {};
  if (!c.enabled) return h('p', { testid: 'checkpoint-summary', class: 'muted' }, 'Checkpointing is off for this job.');
  return h('p', { testid: 'checkpoint-summary' },
    `${c.completed} completed · ${c.failed} failed`, c.inProgress ? ' · ' : '',
    c.inProgress ? badge('in progress', 'info') : null);
}

// checkpoints lists the history, newest first; a row whose ID is in open
// is followed by its per-subtask details. toggle(id) flips that.
export function checkpoints(job, open, toggle) {
  const cols = [[''], ['ID', 'num'], ['Status'], ['Trigger'], ['Duration', 'num'], ['Size', 'num'],
    ['In flight', 'num'], ['Alignment', 'num'], ['Unaligned', 'num'], ['Failure']];
  const rows = [];
  for (const c of list((job.checkpoints || {}).history)) {
    const isOpen = open.has(c.id);
    rows.push(h('tr', { testid: 'checkpoint-row', 'data-checkpoint-id': c.id, 'data-status': c.status },
      h('td', null, h('button', {
        class: 'toggle', testid: 'checkpoint-toggle', 'aria-expanded': String(isOpen),
        title: 'per-subtask details', onclick: () => toggle(c.id),
      }, isOpen ? '▾' : '▸')),
      num('id', c.id),
      cell('status', [badge(c.status, `cp cp-${(c.status || '').replace(/\s+/g, '-')}`), c.savepoint ? badge('savepoint', 'info') : null]),
      cell('trigger', f.dateTime(c.trigger), { class: 'mono', title: f.iso(c.trigger) }),
      num('seconds', f.seconds(c.seconds)),
      num('bytes', f.bytes(c.bytes)),
      num('inFlightBytes', f.bytes(c.inFlightBytes)),
      num('alignmentSeconds', f.seconds(c.alignmentSeconds)),
      num('unalignedSubtasks', c.unalignedSubtasks),
      cell('failure', c.failure || '', { class: 'error-text' })));
    if (isOpen) rows.push(h('tr', { class: 'details' }, h('td', { colspan: cols.length }, checkpointDetails(c))));
  }
  return table(cols, rows, 'No checkpoints yet.', { class: 'checkpoints' });
}

function checkpointDetails(c) {
  const cols = [['Stage'], ['Subtask', 'num'], ['Acked'], ['Start delay', 'num'], ['Alignment', 'num'],
    ['Sync', 'num'], ['Async', 'num'], ['Size', 'num'], ['In flight', 'num'], ['Unaligned']];
  const rows = list(c.subtasks).map((t) =>
    h('tr', { testid: 'checkpoint-subtask-row', 'data-stage-name': t.stage, 'data-subtask': t.subtask },
      cell('stage', t.stage, { class: 'name' }),
      num('subtask', t.subtask),
      cell('acknowledged', t.acknowledged ? '✓' : '…'),
      num('startDelaySeconds', f.seconds(t.startDelaySeconds)),
      num('alignmentSeconds', f.seconds(t.alignmentSeconds)),
      num('syncSeconds', f.seconds(t.syncSeconds)),
      num('asyncSeconds', f.seconds(t.asyncSeconds)),
      num('bytes', f.bytes(t.bytes)),
      num('inFlightBytes', f.bytes(t.inFlightBytes)),
      cell('unaligned', t.unaligned ? badge('unaligned', 'warn') : '')));
  return h('div', { testid: 'checkpoint-details', 'data-checkpoint-id': c.id },
    table(cols, rows, 'No subtask has reported yet.', { class: 'inner' }));
}

export function late(job) {
  const cols = [['Transform'], ['Dropped late', 'num'], ['Dropped (closed)', 'num'], ['Arrivals', 'num'],
    ['Delay p50', 'num'], ['p99', 'num'], ['max', 'num'], ['Input spread', 'num']];
  const rows = list(job.late).map((l) =>
    h('tr', { testid: 'late-row', 'data-transform': l.transform },
      cell('transform', [l.transform, l.source ? ' ' : '', l.source ? badge('source', 'muted') : null], { class: 'name' }),
      num('droppedLate', f.count(l.droppedLate)),
      num('droppedClosed', f.count(l.droppedClosed)),
      num('arrivals', f.count(l.arrivals)),
      num('arrivalP50Millis', f.millis(l.arrivalP50Millis)),
      num('arrivalP99Millis', f.millis(l.arrivalP99Millis)),
      num('arrivalMaxMillis', f.millis(l.arrivalMaxMillis)),
      num('inputSpreadSeconds', f.seconds(l.inputSpreadSeconds))));
  return table(cols, rows, 'No late data recorded.', { class: 'late' });
}

export function userMetrics(job) {
  const cols = [['Namespace'], ['Name'], ['Transform'], ['Kind'], ['Value', 'num'], ['Count', 'num'],
    ['Mean', 'num'], ['Min', 'num'], ['Max', 'num']];
  const dist = (m) => m.kind === 'distribution';
  const n = (x) => (typeof x === 'number' && Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: 3 }) : f.DASH);
  const rows = list(job.user).map((m) =>
    h('tr', { testid: 'user-metric-row', 'data-namespace': m.namespace, 'data-name': m.name },
      cell('namespace', m.namespace, { class: 'mono' }),
      cell('name', m.name, { class: 'mono' }),
      cell('transform', m.transform, { class: 'name' }),
      cell('kind', m.kind),
      num('value', dist(m) ? n(m.sum) : n(m.value), dist(m) ? 'sum' : null),
      num('count', dist(m) ? n(m.count) : ''),
      num('mean', dist(m) && m.count ? n(m.sum / m.count) : ''),
      num('min', dist(m) ? n(m.min) : ''),
      num('max', dist(m) ? n(m.max) : '')));
  return table(cols, rows, 'The pipeline reports no metrics of its own.', { class: 'user' });
}

// workers is a row of figures rather than a table: Workers has four.
export function workers(job) {
  const w = job.workers || {};
  const fig = (col, label, value, warn) =>
    h('div', { class: `fig-card${warn ? ' warn' : ''}`, 'data-col': col }, h('div', { class: 'v' }, String(value ?? f.DASH)), h('div', { class: 'k' }, label));
  return h('div', { class: 'cards', testid: 'workers' },
    fig('running', 'SDK workers running', w.running),
    fig('lost', 'lost', w.lost, w.lost > 0),
    fig('bundleRetries', 'bundle retries', w.bundleRetries, w.bundleRetries > 0));
}

// MAX_MESSAGES bounds the list: a chatty job must not grow the page forever.
const MAX_MESSAGES = 200;

export function messages(job) {
  const all = list(job.messages);
  const shown = all.slice(-MAX_MESSAGES);
  const rows = shown.map((m) =>
    h('div', { testid: 'message-row', class: `msg imp-${m.importance}` },
      h('span', { class: 'mono when', title: f.iso(m.time) }, f.dateTime(m.time).slice(11)),
      h('span', { class: 'imp' }, m.importance),
      h('span', { class: 'text' }, m.text)));
  return h('div', { class: 'messages', testid: 'messages' },
    all.length > shown.length ? h('div', { class: 'muted' }, `${all.length - shown.length} older messages not shown`) : null,
    rows.length ? rows : h('div', { class: 'muted' }, 'No messages.'));
}
