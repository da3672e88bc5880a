// Charts for a result, drawn as SVG without any library.
//
// The server chooses the kind from the result's shape: {"kind": "bar" | "line" | "number" | "none", "x", "y"}.
// Every label and tooltip comes from the database, so it is set with textContent only (through `label`,
// which makes invisible characters visible and shortens long text); nothing is ever parsed as markup.

const SVG = "http://www.w3.org/2000/svg";
const MAX_BARS = 50;  // as the server's sqlweave.chart.MAX_BARS
const MAX_POINTS = 1000;

function svg(tag, attrs, parent) {
  const el = document.createElementNS(SVG, tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  }
  if (parent) parent.appendChild(el);
  return el;
}

function svgText(parent, x, y, text, attrs) {
  const el = svg("text", Object.assign({ x, y }, attrs || {}), parent);
  el.textContent = text;
  return el;
}

function tooltip(parent, text) {
  const t = svg("title", null, parent);
  t.textContent = text;
  return t;
}

/** Column index for the server's `x` / `y` (a column name or an index), or `fallback`. */
export function columnIndex(columns, ref, fallback) {
  if (typeof ref === "number" && Number.isInteger(ref) && ref >= 0 && ref < columns.length) return ref;
  if (typeof ref === "string") {
    const i = columns.indexOf(ref);
    if (i >= 0) return i;
  }
  return fallback;
}

function toNumber(v) {
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (typeof v === "string" && v.trim() !== "") {
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

const NUMBER_FORMAT = new Intl.NumberFormat("en", { maximumFractionDigits: 2 });
const COMPACT_FORMAT = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 });

export function formatNumber(n) {
  return NUMBER_FORMAT.format(n);
}

function formatTick(n) {
  return Math.abs(n) >= 10000 ? COMPACT_FORMAT.format(n) : NUMBER_FORMAT.format(n);
}

/** About `count` round tick values covering [lo, hi]. */
function ticks(lo, hi, count) {
  if (lo === hi) {
    if (lo === 0) return [0, 1];
    lo = Math.min(0, lo);
    hi = Math.max(0, hi);
  }
  const span = hi - lo;
  const raw = span / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const norm = raw / mag;
  const step = (norm >= 5 ? 10 : norm >= 2 ? 5 : norm >= 1 ? 2 : 1) * mag;
  const start = Math.floor(lo / step) * step;
  const out = [];
  for (let v = start; v <= hi + step * 0.5; v += step) out.push(Math.round(v / step) * step);
  if (out[out.length - 1] < hi) out.push(out[out.length - 1] + step);
  return out;
}

/**
 * Draw `result` ({columns, rows}) as `chart` into `container` (emptied first).
 * `label(value, max)` turns a value into display text (visible escapes, truncation).
 * Returns true when something was drawn.
 */
export function drawChart(container, result, chart, label, width = 640) {
  container.replaceChildren();
  if (!chart || !result || !Array.isArray(result.columns) || !Array.isArray(result.rows) || result.rows.length === 0) {
    return false;
  }
  const kind = chart.kind;
  if (kind === "number") return drawNumber(container, result, chart, label);
  const W = Math.round(Math.max(300, Math.min(900, width)));
  if (kind === "bar") return drawBar(container, result, chart, label, W);
  if (kind === "line") return drawLine(container, result, chart, label, W);
  return false;
}

function drawNumber(container, result, chart, label) {
  const cols = result.columns;
  const yi = columnIndex(cols, chart.y, columnIndex(cols, chart.x, 0));
  const value = result.rows[0][yi];
  const box = document.createElement("figure");
  box.className = "big-number";
  const fig = document.createElement("div");
  fig.className = "figure";
  const n = toNumber(value);
  fig.textContent = n === null ? label(value, 120) : formatNumber(n);
  const cap = document.createElement("figcaption");
  cap.className = "caption";
  cap.textContent = label(cols[yi], 120);
  box.append(fig, cap);
  container.appendChild(box);
  return true;
}

function seriesFrom(result, chart, maxItems) {
  const cols = result.columns;
  const xi = columnIndex(cols, chart.x, 0);
  let yi = columnIndex(cols, chart.y, -1);
  if (yi < 0) {
    // the last numeric column other than x
    for (let i = cols.length - 1; i >= 0; i--) {
      if (i !== xi && toNumber(result.rows[0][i]) !== null) { yi = i; break; }
    }
  }
  if (yi < 0) return null;
  const items = [];
  for (const row of result.rows) {
    const y = toNumber(row[yi]);
    if (y === null) continue;
    items.push({ x: row[xi], y });
    if (items.length >= maxItems) break;
  }
  if (items.length === 0) return null;
  return { xName: cols[xi], yName: cols[yi], items, total: result.rows.length };
}

function note(container, text) {
  const p = document.createElement("p");
  p.className = "note";
  p.textContent = text;
  container.appendChild(p);
}

function drawBar(container, result, chart, label, W) {
  const s = seriesFrom(result, chart, MAX_BARS);
  if (!s) return false;
  const n = s.items.length;
  const labelW = Math.round(Math.min(160, W * 0.3));
  const labelChars = Math.max(8, Math.floor(labelW / 6.5));
  const barH = 20;
  const gap = 6;
  const top = 28;
  const bottom = 34;
  const left = labelW + 10;
  const right = 56;
  const H = top + n * (barH + gap) + bottom;
  const ys = s.items.map((d) => d.y);
  const t = ticks(Math.min(0, ...ys), Math.max(0, ...ys), 5);
  const lo = t[0];
  const hi = t[t.length - 1];
  const sx = (v) => left + ((v - lo) / (hi - lo || 1)) * (W - left - right);

  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "bar-chart", preserveAspectRatio: "xMinYMin meet" });
  const title = `${label(s.yName, 60)} by ${label(s.xName, 60)}`;
  tooltip(root, title);
  svgText(root, 0, 16, title, { class: "chart-title" });

  const grid = svg("g", { class: "grid" }, root);
  const axis = svg("g", { class: "axis" }, root);
  for (const v of t) {
    const x = sx(v);
    svg("line", { x1: x, x2: x, y1: top - 4, y2: H - bottom + 4 }, grid);
    svgText(axis, x, H - bottom + 18, formatTick(v), { "text-anchor": "middle" });
  }
  svg("line", { x1: sx(0), x2: sx(0), y1: top - 4, y2: H - bottom + 4 }, axis);
  svgText(axis, (left + W - right) / 2, H - 2, label(s.yName, 60), { "text-anchor": "middle" });

  s.items.forEach((d, i) => {
    const y = top + i * (barH + gap);
    const x0 = sx(Math.min(0, d.y));
    const x1 = sx(Math.max(0, d.y));
    const g = svg("g", { class: "bar-group" }, root);
    const xText = label(d.x, 500);
    tooltip(g, `${xText}: ${formatNumber(d.y)}`);
    svgText(g, labelW, y + barH * 0.7, label(d.x, labelChars), { "text-anchor": "end", class: "bar-label" });
    svg("rect", { class: "bar", x: x0, y, width: Math.max(1, x1 - x0), height: barH, rx: 2 }, g);
    svgText(g, x1 + 4, y + barH * 0.7, formatNumber(d.y), { class: "value-label" });
  });
  container.appendChild(root);
  if (s.total > n) note(container, `The first ${n} of ${s.total} rows are drawn.`);
  return true;
}

function drawLine(container, result, chart, label, W) {
  const s = seriesFrom(result, chart, MAX_POINTS);
  if (!s) return false;
  const n = s.items.length;
  const H = Math.round(Math.max(220, Math.min(320, W * 0.5)));
  const top = 28;
  const bottom = 48;
  const left = 56;
  const right = 16;
  const ys = s.items.map((d) => d.y);
  const t = ticks(Math.min(...ys), Math.max(...ys), 5);
  const lo = t[0];
  const hi = t[t.length - 1];
  const sx = (i) => (n === 1 ? (left + W - right) / 2 : left + (i / (n - 1)) * (W - left - right));
  const sy = (v) => H - bottom - ((v - lo) / (hi - lo || 1)) * (H - top - bottom);

  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "line-chart", preserveAspectRatio: "xMinYMin meet" });
  const title = `${label(s.yName, 60)} by ${label(s.xName, 60)}`;
  tooltip(root, title);
  svgText(root, 0, 16, title, { class: "chart-title" });

  const grid = svg("g", { class: "grid" }, root);
  const axis = svg("g", { class: "axis" }, root);
  for (const v of t) {
    const y = sy(v);
    svg("line", { x1: left, x2: W - right, y1: y, y2: y }, grid);
    svgText(axis, left - 6, y + 4, formatTick(v), { "text-anchor": "end" });
  }
  svg("line", { x1: left, x2: W - right, y1: H - bottom, y2: H - bottom }, axis);
  svg("line", { x1: left, x2: left, y1: top, y2: H - bottom }, axis);
  // x labels at evenly spaced points, the first and the last included, about 90 px apart
  const slots = Math.max(2, Math.min(n, Math.floor((W - left - right) / 90) + 1));
  const shown = new Set(n === 1 ? [0] : Array.from({ length: slots }, (_, j) => Math.round((j * (n - 1)) / (slots - 1))));
  for (const i of shown) {
    const anchor = n > 1 && i === n - 1 ? "end" : n > 1 && i === 0 ? "start" : "middle";
    const x = anchor === "end" ? Math.min(sx(i) + 4, W - 2) : anchor === "start" ? Math.max(sx(i) - 4, 2) : sx(i);
    svgText(axis, x, H - bottom + 16, label(s.items[i].x, 12), { "text-anchor": anchor });
  }
  svgText(axis, (left + W - right) / 2, H - 6, label(s.xName, 60), { "text-anchor": "middle" });

  const points = s.items.map((d, i) => `${sx(i).toFixed(1)},${sy(d.y).toFixed(1)}`).join(" ");
  svg("polyline", { class: "line", points }, root);
  if (n <= 120) {
    const dots = svg("g", { class: "points" }, root);
    s.items.forEach((d, i) => {
      const c = svg("circle", { class: "point", cx: sx(i).toFixed(1), cy: sy(d.y).toFixed(1), r: 3.5 }, dots);
      tooltip(c, `${label(d.x, 500)}: ${formatNumber(d.y)}`);
    });
  }
  container.appendChild(root);
  if (s.total > n) note(container, `The first ${n} of ${s.total} rows are drawn.`);
  return true;
}
