// The stage graph: boxes laid out by layout.js, drawn as SVG, coloured by
// load as Flink colours its job graph. The drawing is rebuilt only when the
// graph's shape changes; each sample otherwise updates the figures in place,
// so nothing flickers and a test's handle on a node stays valid.

import { h, s } from './dom.js';
import * as f from './format.js';
import { layout, NODE_W, NODE_H } from './layout.js';

// Fill and stroke for an idle, a busy and a backpressured stage; a stage's
// colour mixes them by its ratios (which add to one).
const IDLE = { fill: [214, 240, 236], line: [38, 150, 140] };
const BUSY = { fill: [255, 214, 163], line: [230, 120, 0] };
const BACKPRESSURED = { fill: [247, 170, 165], line: [200, 40, 40] };

function mix(st, part) {
  const busy = clamp(st.busyRatio);
  const bp = clamp(st.backpressuredRatio);
  const idle = Math.max(0, 1 - busy - bp);
  const sum = idle + busy + bp || 1;
  const c = [0, 1, 2].map((i) =>
    Math.round((IDLE[part][i] * idle + BUSY[part][i] * busy + BACKPRESSURED[part][i] * bp) / sum));
  return `rgb(${c.join(',')})`;
}

const clamp = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);

// shape is what decides the layout; figures changing leave it alone.
function shape(job) {
  return JSON.stringify([
    (job.stages || []).map((st) => [st.index, st.name, st.kind, st.parallelism]),
    (job.edges || []).map((e) => [e.from, e.to, e.partition]),
  ]);
}

const MAX_NAME = 27;
const MIN_SCALE = 0.7;
const short = (name) => (name.length > MAX_NAME ? name.slice(0, MAX_NAME - 1) + '…' : name);

export class StageGraph {
  // onSelect(stageName or null) is called when a box is clicked.
  constructor(onSelect) {
    this.onSelect = onSelect;
    this.el = h('div', { class: 'graph' });
    this.shape = null;
    this.boxes = new Map(); // stage index -> {g, rect, strip, text fields, bars}
    // Refit on resize; the listener lives as long as the page (one graph
    // per job page, and the old one's element is gone).
    this.onResize = () => this.fit();
    window.addEventListener('resize', this.onResize);
  }

  // close drops the resize listener when the page is left.
  close() {
    window.removeEventListener('resize', this.onResize);
  }

  update(job, selected) {
    const sh = shape(job);
    if (sh !== this.shape) {
      this.shape = sh;
      this.draw(job);
    }
    for (const st of job.stages || []) {
      const b = this.boxes.get(st.index);
      if (b) this.fill(b, st, selected === st.name);
    }
  }

  draw(job) {
    const stages = job.stages || [];
    this.boxes.clear();
    if (stages.length === 0) {
      this.el.replaceChildren(h('p', { class: 'muted' }, 'No stages yet.'));
      return;
    }
    const g = layout(stages, job.edges || []);
    const svg = s('svg', {
      testid: 'stage-graph', width: g.width, height: g.height,
      viewBox: `0 0 ${g.width} ${g.height}`, role: 'img', 'aria-label': 'stage graph',
    });
    svg.append(s('defs', null,
      s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
        s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }))));
    for (const e of g.edges) svg.append(edge(e));
    for (const n of g.nodes) {
      if (n.dummy) continue;
      const b = box(n, this.onSelect);
      this.boxes.set(n.stage.index, b);
      svg.append(b.g);
    }
    this.el.replaceChildren(svg);
    this.fit();
  }

  // fit shrinks a graph wider than the page to the page's width, down to
  // MIN_SCALE (below that the text is too small to read, and the graph
  // scrolls instead). The viewBox keeps the drawing's own coordinates.
  fit() {
    const svg = this.el.querySelector('svg');
    if (!svg) return;
    const w = Number(svg.getAttribute('viewBox').split(' ')[2]);
    const h = Number(svg.getAttribute('viewBox').split(' ')[3]);
    const room = this.el.clientWidth;
    const scale = room > 0 && w > room ? Math.max(MIN_SCALE, room / w) : 1;
    svg.setAttribute('width', Math.floor(w * scale));
    svg.setAttribute('height', Math.floor(h * scale));
  }

  fill(b, st, selected) {
    b.rect.setAttribute('fill', mix(st, 'fill'));
    b.rect.setAttribute('stroke', mix(st, 'line'));
    b.strip.setAttribute('fill', mix(st, 'line'));
    b.g.classList.toggle('selected', selected);
    b.rate.textContent = `out ${f.rate(st.elementsOutPerSecond)}`;
    b.rateIn.textContent = `in ${f.rate(st.elementsInPerSecond)}`;
    b.wm.textContent = f.watermark(st.outputWatermark);
    b.lag.textContent = `lag ${f.lag(st.watermarkLagSeconds, st.outputWatermark)}`;
    b.ratios.textContent = `busy ${f.percent(st.busyRatio)} · bp ${f.percent(st.backpressuredRatio)}`;
    b.title.textContent = `${st.name}\nwatermark ${f.watermarkTitle(st.outputWatermark)}\n` +
      `busy ${f.percent(st.busyRatio)}, idle ${f.percent(st.idleRatio)}, backpressured ${f.percent(st.backpressuredRatio)}`;
    // The load bar: busy, backpressured, idle, left to right.
    const w = NODE_W - 24;
    const busy = clamp(st.busyRatio) * w;
    const bp = clamp(st.backpressuredRatio) * w;
    b.barBusy.setAttribute('width', busy);
    b.barBP.setAttribute('x', 16 + busy);
    b.barBP.setAttribute('width', bp);
  }
}

function box(n, onSelect) {
  const st = n.stage;
  const text = (x, y, cls, testid, content) => s('text', { x, y, class: cls, testid }, content || '');
  // Rows: name; kind and parallelism; rates; watermark (a date and time
  // may need the width); lag and ratios; the load bar.
  const rate = text(16, 57, 'fig', 'stage-rate');
  const rateIn = text(NODE_W - 8, 57, 'fig end', 'stage-rate-in');
  const wm = text(42, 75, 'fig', 'stage-watermark');
  const lag = text(16, 93, 'fig small', 'stage-lag');
  const ratios = text(NODE_W - 8, 93, 'fig small end', 'stage-ratios');
  const rect = s('rect', { x: 0, y: 0, width: NODE_W, height: NODE_H, rx: 6, class: 'box' });
  const strip = s('rect', { x: 0, y: 0, width: 6, height: NODE_H, rx: 3 });
  const barBusy = s('rect', { x: 16, y: NODE_H - 9, height: 4, width: 0, class: 'bar-busy' });
  const barBP = s('rect', { x: 16, y: NODE_H - 9, height: 4, width: 0, class: 'bar-bp' });
  const title = s('title');
  const g = s('g', {
    testid: 'stage-node', 'data-stage-name': st.name, 'data-stage-index': st.index,
    class: 'node', transform: `translate(${n.x},${n.y})`, tabindex: 0,
    onclick: () => onSelect(st.name),
  },
  title, rect, strip,
  s('rect', { x: 16, y: NODE_H - 9, width: NODE_W - 24, height: 4, class: 'bar-idle' }), barBusy, barBP,
  text(16, 21, 'name', 'stage-name', short(st.name)),
  text(16, 39, 'meta', 'stage-kind', st.kind || ''),
  text(NODE_W - 8, 39, 'meta end', 'stage-parallelism', `×${st.parallelism}`),
  rate, rateIn,
  text(16, 75, 'label', null, 'wm'), wm, lag, ratios);
  g.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' || ev.key === ' ') onSelect(st.name);
  });
  return { g, rect, strip, rate, rateIn, wm, lag, ratios, title, barBusy, barBP };
}

function edge(e) {
  const p = e.points;
  let d = `M${p[0][0]},${p[0][1]}`;
  for (let i = 1; i < p.length; i++) {
    const [x0, y0] = p[i - 1];
    const [x1, y1] = p[i];
    if (y0 === y1) {
      d += ` L${x1},${y1}`;
    } else {
      const dx = (x1 - x0) / 2;
      d += ` C${x0 + dx},${y0} ${x1 - dx},${y1} ${x1},${y1}`;
    }
  }
  const kind = (e.partition || '').toLowerCase();
  // The label sits on the first segment, near its source, where edges out
  // of one box have not yet merged with others.
  const [x0, y0] = p[0];
  const [x1, y1] = p[1];
  return s('g', { class: `edge edge-${kind || 'unknown'}`, testid: 'stage-edge', 'data-from': e.from, 'data-to': e.to },
    s('path', { d, 'marker-end': 'url(#arrow)' }),
    kind ? s('text', { x: (x0 + x1) / 2, y: (y0 + y1) / 2 - 5, class: 'edge-label' }, kind.toUpperCase()) : null);
}
