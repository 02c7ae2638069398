// One job's page (#/jobs/<id>): its header and actions, its stage graph and
// its tables, refreshed from a poll of /api/jobs/<id> about once a second.
// Once the job is terminal, one more sample is read (the runner's last
// figures) and the poll stops.

import { getJob, act, isTerminal, poll, APIError } from './api.js';
import { h } from './dom.js';
import * as f from './format.js';
import { StageGraph } from './graph.js';
import { stateBadge } from './joblist.js';
import * as status from './status.js';
import * as t from './tables.js';

const ACTIONS = [
  {
    action: 'savepoint', label: 'Savepoint', testid: 'btn-savepoint',
    possible: (st) => st === 'RUNNING',
    success: (r) => `Savepoint written to ${r.location || '(no location given)'}`,
  },
  {
    action: 'drain', label: 'Drain', testid: 'btn-drain',
    possible: (st) => st === 'RUNNING',
    success: () => 'Drain requested: the job finishes its input and stops.',
  },
  {
    action: 'cancel', label: 'Cancel', testid: 'btn-cancel',
    possible: (st) => !isTerminal(st) && st !== 'CANCELLING',
    success: () => 'Cancel requested.',
  },
];

export function jobPage(root, id) {
  const page = new JobPage(root, id);
  return { stop: () => page.stop() };
}

class JobPage {
  constructor(root, id) {
    this.id = id;
    this.job = null;
    this.selected = null; // a stage name whose subtasks alone are listed
    this.openCheckpoints = new Set();
    this.busy = false; // an action is in flight
    this.sawTerminal = false;
    this.build(root);
    this.poller = poll((signal) => this.refresh(signal), 1000);
  }

  stop() {
    this.poller.stop();
    this.graph.close();
  }

  build(root) {
    const sec = (title, testid, ...extra) => {
      const body = h('div', { class: 'section-body', testid });
      root.append(h('section', null, h('h2', null, title, ...extra), body));
      return body;
    };
    this.name = h('span', { testid: 'job-name' }, this.id);
    this.state = h('span', { testid: 'job-state', class: 'badge state' }, '…');
    this.meta = h('div', { class: 'meta mono', testid: 'job-meta' });
    this.error = h('div', { class: 'job-error', testid: 'job-error', hidden: true });
    this.buttons = ACTIONS.map((a) =>
      h('button', { testid: a.testid, class: `action action-${a.action}`, disabled: true, onclick: () => this.act(a) }, a.label));
    this.result = h('span', { testid: 'action-result', class: 'action-result', 'aria-live': 'polite' });
    root.append(
      h('div', { class: 'crumbs' }, h('a', { href: '#/', testid: 'back-to-jobs' }, '← Jobs')),
      h('header', { class: 'job-head' },
        h('div', null, h('h1', null, this.name, ' ', this.state), this.meta),
        h('div', { class: 'actions' }, this.buttons, this.result)),
      this.error);
    this.summary = h('div', { class: 'cards', testid: 'job-summary' });
    root.append(this.summary);
    this.filter = h('span', { class: 'filter', testid: 'stage-filter' });
    this.graph = new StageGraph((name) => this.select(name));
    sec('Stage graph', 'stage-graph-section', h('span', { class: 'legend' },
      h('i', { class: 'sw idle' }), 'idle ', h('i', { class: 'sw busy' }), 'busy ', h('i', { class: 'sw bp' }), 'backpressured'))
      .append(this.graph.el);
    this.sections = {
      subtasks: sec('Subtasks', 'subtasks', this.filter),
      partitions: sec('Kafka partitions', 'partitions'),
      alignment: sec('Watermark alignment', 'alignment'),
      checkpoints: sec('Checkpoints', 'checkpoints'),
      late: sec('Late data', 'late'),
      workers: sec('Workers', 'workers-section'),
      user: sec('User metrics', 'user-metrics'),
      messages: sec('Messages', 'messages-section'),
    };
  }

  async refresh(signal) {
    let job;
    try {
      job = await getJob(this.id, signal);
    } catch (e) {
      if (e.name === 'AbortError') return false;
      if (e instanceof APIError && e.status === 404) {
        this.notFound();
        return false;
      }
      status.failed(e);
      return true;
    }
    this.job = job;
    this.render();
    if (!isTerminal(job.state)) {
      status.ok();
      return true;
    }
    // Terminal: read once more for the final figures, then stop.
    if (this.sawTerminal) {
      status.stopped(`job ${job.state.toLowerCase()} · not updating`);
      return false;
    }
    this.sawTerminal = true;
    status.ok();
    return true;
  }

  notFound() {
    status.stopped('no such job');
    this.state.textContent = 'NOT FOUND';
    this.state.className = 'badge state state-UNKNOWN';
    this.error.hidden = false;
    this.error.replaceChildren(h('span', { testid: 'job-not-found' }, `There is no job ${this.id} on this server.`));
  }

  render() {
    const job = this.job;
    this.name.textContent = job.name || job.id;
    // In place, not replaced: a test (or a screen reader) holding the
    // element keeps seeing the state.
    const badge = stateBadge(job.state);
    this.state.className = badge.className;
    this.state.textContent = badge.textContent;
    this.meta.replaceChildren(
      h('span', { testid: 'job-id' }, job.id), ' · started ', f.dateTime(job.start), ' UTC · ',
      h('span', { testid: 'job-duration' }, f.seconds(job.seconds)),
      job.sampledAt ? ` · sampled ${f.clock(job.sampledAt)}` : '');
    this.error.hidden = !job.error;
    this.error.textContent = job.error || '';
    this.updateButtons();
    this.summary.replaceChildren(...summaryCards(job));
    this.graph.update(job, this.selected);
    const sec = this.sections;
    this.filter.replaceChildren(this.selected
      ? h('button', { class: 'chip', onclick: () => this.select(null) }, `stage ${this.selected} ✕`)
      : h('span', { class: 'muted' }, 'click a stage to list only its subtasks'));
    sec.subtasks.replaceChildren(t.subtasks(job, this.selected));
    sec.partitions.replaceChildren(t.partitions(job));
    sec.alignment.replaceChildren(t.alignment(job));
    sec.checkpoints.replaceChildren(t.checkpointSummary(job), t.checkpoints(job, this.openCheckpoints, (cid) => this.toggle(cid)));
    sec.late.replaceChildren(t.late(job));
    sec.workers.replaceChildren(t.workers(job));
    sec.user.replaceChildren(t.userMetrics(job));
    this.renderMessages(job);
  }

  renderMessages(job) {
    const el = this.sections.messages;
    const box = el.querySelector('.messages');
    // Keep following new messages only if the reader was at the bottom.
    const follow = !box || box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    const next = t.messages(job);
    el.replaceChildren(next);
    next.scrollTop = follow ? next.scrollHeight : box.scrollTop;
  }

  updateButtons() {
    const state = this.job ? this.job.state : '';
    ACTIONS.forEach((a, i) => {
      this.buttons[i].disabled = this.busy || !a.possible(state);
    });
  }

  select(name) {
    this.selected = this.selected === name ? null : name;
    if (this.job) this.render();
  }

  toggle(cid) {
    if (this.openCheckpoints.has(cid)) this.openCheckpoints.delete(cid);
    else this.openCheckpoints.add(cid);
    if (this.job) this.render();
  }

  async act({ action, label, success }) {
    this.busy = true;
    this.updateButtons();
    this.result.className = 'action-result pending';
    this.result.dataset.outcome = 'pending';
    this.result.textContent = `${label}…`;
    try {
      const r = await act(this.id, action);
      this.result.className = 'action-result ok';
      this.result.dataset.outcome = 'ok';
      this.result.textContent = success(r);
    } catch (e) {
      this.result.className = 'action-result error';
      this.result.dataset.outcome = 'error';
      this.result.textContent = `${label} failed: ${e.message}`;
    }
    this.busy = false;
    this.updateButtons();
    this.poller.now();
  }
}

function summaryCards(job) {
  const stages = Array.isArray(job.stages) ? job.stages : [];
  const c = job.checkpoints || {};
  const w = job.workers || {};
  const lateDropped = (Array.isArray(job.late) ? job.late : []).reduce((a, l) => a + (l.droppedLate || 0) + (l.droppedClosed || 0), 0);
  const sinks = stages.filter((st) => !(job.edges || []).some((e) => e.from === st.index));
  const minWM = sinks.length ? Math.min(...sinks.map((st) => st.outputWatermark)) : NaN;
  const card = (testid, label, value, title) =>
    h('div', { class: 'fig-card', testid, title }, h('div', { class: 'v' }, value), h('div', { class: 'k' }, label));
  return [
    card('summary-stages', 'stages', String(stages.length)),
    card('summary-subtasks', 'subtasks', String(stages.reduce((a, st) => a + (st.parallelism || 0), 0))),
    card('summary-watermark', 'output watermark', f.watermark(minWM), f.watermarkTitle(minWM)),
    card('summary-workers', 'SDK workers', String(w.running ?? f.DASH)),
    card('summary-checkpoints', 'checkpoints', c.enabled ? `${c.completed} ✓ ${c.failed} ✗` : 'off'),
    card('summary-late', 'late dropped', f.count(lateDropped)),
  ];
}
