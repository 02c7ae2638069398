// A layered layout of the stage graph, left to right, computed from a
// sample's stages and edges. Pure: no DOM, so it can be read and checked on
// its own.
//
//  1. Layers by longest path: a stage sits one layer right of its furthest
//     upstream stage, so every edge points right. Edges that would close a
//     cycle (there should be none) are left out of the layering.
//  2. An edge that spans several layers gets a dummy node in each layer it
//     crosses, so it is routed between the boxes and counts in step 3.
//  3. Order within layers: barycenter sweeps, down and up, keeping the
//     order with the fewest crossings seen.
//  4. Heights: each node moves towards the mean height of its neighbours,
//     kept in order and apart; the mean of a top-down and a bottom-up pass
//     of that keeps both rules and is balanced.

export const NODE_W = 212;
export const NODE_H = 108;
const LAYER_GAP = 64; // between a layer's right side and the next one's left
const ROW_GAP = 26;
const MARGIN = 16;
const SWEEPS = 8;

// layout returns {nodes, edges, width, height}. nodes[i] is
// {key, stage, dummy, layer, x, y, w, h} with (x, y) the top left corner;
// edges[i] is {from, to, partition, points}, points running from the source
// box's right side through the dummies to the target box's left side.
export function layout(stages, edges) {
  const nodes = new Map(); // key -> node
  for (const st of stages) {
    nodes.set(`s${st.index}`, { key: `s${st.index}`, stage: st, dummy: false, preds: [], succs: [] });
  }
  const real = edges.filter((e) => e.from !== e.to && nodes.has(`s${e.from}`) && nodes.has(`s${e.to}`));
  assignLayers(nodes, real);

  // Split long edges into segments between adjacent layers.
  const routes = [];
  for (const e of real) {
    let prev = nodes.get(`s${e.from}`);
    const last = nodes.get(`s${e.to}`);
    const chain = [prev];
    if (last.layer <= prev.layer) continue; // a back edge of a cycle: not drawn
    for (let l = prev.layer + 1; l < last.layer; l++) {
      const d = { key: `d${routes.length}_${l}`, dummy: true, layer: l, preds: [], succs: [] };
      nodes.set(d.key, d);
      link(prev, d);
      chain.push(d);
      prev = d;
    }
    link(prev, last);
    chain.push(last);
    routes.push({ from: e.from, to: e.to, partition: e.partition || '', chain });
  }

  const layers = orderLayers([...nodes.values()]);
  placeNodes(layers);

  const out = [...nodes.values()].map(({ preds, succs, ...n }) => n);
  let width = 0;
  let height = 0;
  for (const n of out) {
    width = Math.max(width, n.x + n.w + MARGIN);
    height = Math.max(height, n.y + n.h + MARGIN);
  }
  return { nodes: out, edges: routes.map(route), width, height };
}

function link(a, b) {
  a.succs.push(b);
  b.preds.push(a);
}

// assignLayers sets node.layer by longest path over a topological order
// (Kahn's); nodes left over by a cycle follow in index order.
function assignLayers(nodes, edges) {
  const indeg = new Map([...nodes.keys()].map((k) => [k, 0]));
  const out = new Map([...nodes.keys()].map((k) => [k, []]));
  for (const e of edges) {
    indeg.set(`s${e.to}`, indeg.get(`s${e.to}`) + 1);
    out.get(`s${e.from}`).push(`s${e.to}`);
  }
  const byIndex = (a, b) => nodes.get(a).stage.index - nodes.get(b).stage.index;
  const ready = [...nodes.keys()].filter((k) => indeg.get(k) === 0).sort(byIndex);
  const order = [];
  while (ready.length > 0) {
    const k = ready.shift();
    order.push(k);
    for (const t of out.get(k)) {
      indeg.set(t, indeg.get(t) - 1);
      if (indeg.get(t) === 0) ready.push(t);
    }
  }
  const placed = new Set(order);
  order.push(...[...nodes.keys()].filter((k) => !placed.has(k)).sort(byIndex));

  const seen = new Set();
  for (const k of order) {
    let layer = 0;
    for (const e of edges) {
      const from = `s${e.from}`;
      if (`s${e.to}` === k && seen.has(from)) layer = Math.max(layer, nodes.get(from).layer + 1);
    }
    nodes.get(k).layer = layer;
    seen.add(k);
  }
}

// orderLayers returns the nodes by layer, each layer in its drawing order.
function orderLayers(all) {
  const depth = Math.max(0, ...all.map((n) => n.layer)) + 1;
  const layers = Array.from({ length: depth }, () => []);
  // Start from index order (dummies after the stage they leave), which for
  // a pipeline written top to bottom is often close already.
  const rank = (n) => (n.dummy ? rank(n.preds[0]) + 0.5 : n.stage.index);
  for (const n of [...all].sort((a, b) => rank(a) - rank(b))) layers[n.layer].push(n);

  let best = layers.map((l) => [...l]);
  let bestCross = crossings(layers);
  for (let i = 0; i < SWEEPS && bestCross > 0; i++) {
    const down = i % 2 === 0;
    for (let l = down ? 1 : depth - 2; down ? l < depth : l >= 0; l += down ? 1 : -1) {
      const pos = new Map(layers[down ? l - 1 : l + 1].map((n, j) => [n, j]));
      const bary = new Map();
      layers[l].forEach((n, j) => {
        const nb = (down ? n.preds : n.succs).filter((m) => pos.has(m));
        bary.set(n, nb.length ? nb.reduce((a, m) => a + pos.get(m), 0) / nb.length : j);
      });
      layers[l].sort((a, b) => bary.get(a) - bary.get(b)); // stable: ties keep order
    }
    const c = crossings(layers);
    if (c < bestCross) {
      bestCross = c;
      best = layers.map((l) => [...l]);
    }
  }
  return best;
}

// crossings counts pairs of segments between adjacent layers that cross.
function crossings(layers) {
  let total = 0;
  for (let l = 0; l + 1 < layers.length; l++) {
    const below = new Map(layers[l + 1].map((n, j) => [n, j]));
    const segs = [];
    layers[l].forEach((n, i) => n.succs.forEach((m) => segs.push([i, below.get(m)])));
    for (let a = 0; a < segs.length; a++) {
      for (let b = a + 1; b < segs.length; b++) {
        if ((segs[a][0] - segs[b][0]) * (segs[a][1] - segs[b][1]) < 0) total++;
      }
    }
  }
  return total;
}

// placeNodes sets x, y, w and h of every node; y is a centre until the end.
function placeNodes(layers) {
  for (const layer of layers) {
    let y = 0;
    for (const n of layer) {
      n.w = n.dummy ? 0 : NODE_W;
      n.h = n.dummy ? 0 : NODE_H;
      n.x = MARGIN + n.layer * (NODE_W + LAYER_GAP);
      n.y = y + n.h / 2;
      y += n.h + ROW_GAP;
    }
  }
  for (let pass = 0; pass < 4; pass++) {
    const down = pass % 2 === 0;
    const seq = down ? layers : [...layers].reverse();
    for (const layer of seq) {
      const want = layer.map((n) => {
        const nb = down ? n.preds : n.succs;
        return nb.length ? nb.reduce((a, m) => a + m.y, 0) / nb.length : n.y;
      });
      const gap = (i) => (layer[i - 1].h + layer[i].h) / 2 + (layer[i - 1].dummy && layer[i].dummy ? ROW_GAP / 2 : ROW_GAP);
      const fwd = want.slice();
      for (let i = 1; i < layer.length; i++) fwd[i] = Math.max(fwd[i], fwd[i - 1] + gap(i));
      const back = want.slice();
      for (let i = layer.length - 2; i >= 0; i--) back[i] = Math.min(back[i], back[i + 1] - gap(i + 1));
      layer.forEach((n, i) => { n.y = (fwd[i] + back[i]) / 2; });
    }
  }
  const all = layers.flat();
  const top = Math.min(...all.map((n) => n.y - n.h / 2));
  for (const n of all) n.y = n.y - n.h / 2 - top + MARGIN;
}

function route(r) {
  const pts = [];
  r.chain.forEach((n, i) => {
    const cy = n.y + n.h / 2;
    if (i === 0) pts.push([n.x + n.w, cy]);
    else if (i === r.chain.length - 1) pts.push([n.x, cy]);
    else pts.push([n.x, cy], [n.x + NODE_W, cy]); // a dummy: pass straight across the layer
  });
  return { from: r.from, to: r.to, partition: r.partition, points: pts };
}
