// Building DOM nodes without innerHTML: every string from the server (job
// names, errors, messages) becomes a text node, so nothing in a sample can
// inject markup.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children, isSVG) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'testid') el.setAttribute('data-testid', v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class' && !isSVG) el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// h('td', {class: 'num', testid: 'x'}, 'text', child, [more]) makes an HTML
// element. Attributes: testid sets data-testid, onX adds a listener, false
// or null leaves the attribute out.
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children, false);
}

// s is h for SVG elements.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children, true);
}

// table makes a table with a header row. cols are [label, className?] pairs;
// rows are <tr> elements. empty is the text shown when rows is empty.
export function table(cols, rows, empty, attrs) {
  const head = h('tr', null, cols.map(([label, cls]) => h('th', { class: cls }, label)));
  const body = rows.length > 0
    ? rows
    : h('tr', { class: 'empty' }, h('td', { colspan: cols.length }, empty));
  return h('table', attrs, h('thead', null, head), h('tbody', null, body));
}

// num is a right-aligned, monospace cell; col names the jobview field it
// shows (data-col), for tests that read one figure.
export function num(col, text, title) {
  return h('td', { class: 'num', 'data-col': col, title }, text);
}

export function cell(col, text, attrs) {
  return h('td', { 'data-col': col, ...attrs }, text);
}

// badge is a small coloured label, such as a job state.
export function badge(text, cls, testid) {
  return h('span', { class: `badge ${cls}`, testid }, text);
}
