// Charts for a result, drawn by Chart.js (vendor/chart.umd.min.js, loaded by index.html before this module).
//
// The server chooses the kind from the result's shape: {"kind": "bar" | "line" | "number" | "none", "x", "y"}.
// Every label and tooltip comes from the database. It goes through `label` (invisible characters made visible,
// long text shortened) and Chart.js paints it on a canvas: nothing is ever parsed as markup. One number is shown
// as text (textContent), not as a chart.

const MAX_BARS = 50;  // as the server's sqlweave.chart.MAX_BARS
const MAX_POINTS = 1000;

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

/**
 * Draw `result` ({columns, rows}) as `chart` into `container` (emptied first).
 * `label(value, max)` turns a value into display text (visible escapes, truncation).
 * Returns true when something was drawn.
 */
export function drawChart(container, result, chart, label, width = 640) {
  clearChart(container);
  if (!chart || !result || !Array.isArray(result.columns) || !Array.isArray(result.rows) || result.rows.length === 0) {
    return false;
  }
  const kind = chart.kind;
  if (kind === "number") return drawNumber(container, result, chart, label);
  const W = Math.round(Math.max(240, Math.min(900, width)));
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

/** The page's colours and font (CSS custom properties, light or dark), for the canvas. */
function palette(container) {
  const css = getComputedStyle(container);
  const v = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  return {
    bar: v("--bar", "#3d6fd8"), text: v("--text", "#1b1f24"), muted: v("--muted", "#5b6470"),
    line: v("--line", "#d0d7de"), panel: v("--panel", "#ffffff"), font: v("--font", "system-ui, sans-serif"),
  };
}

/** Destroy the charts drawn into `container`, so that nothing keeps drawing into a canvas that is gone. */
export function clearChart(container) {
  const Chart = globalThis.Chart;
  for (const canvas of container.querySelectorAll("canvas")) {
    if (Chart) Chart.getChart(canvas)?.destroy();
  }
  container.replaceChildren();
}

/** A Chart.js chart of `type` over series `s` in a W x H canvas; `horizontal` puts the categories down the side. */
function plot(container, s, label, type, W, H, horizontal, categoryChars) {
  const Chart = globalThis.Chart;
  if (!Chart) return false;  // the library did not load: the table still shows the result
  const p = palette(container);
  const canvas = document.createElement("canvas");
  canvas.className = `${type}-chart`;
  canvas.width = W;
  canvas.height = H;
  const title = `${label(s.yName, 60)} by ${label(s.xName, 60)}`;
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", title);
  container.appendChild(canvas);
  const font = { family: p.font, size: 11 };
  const value = { grid: { color: p.line }, border: { color: p.line, dash: [2, 3] },
                  ticks: { color: p.muted, font, callback: (v) => formatTick(Number(v)) },
                  title: { display: horizontal, text: label(s.yName, 60), color: p.muted, font } };
  const category = { grid: { display: false }, border: { color: p.line },
                     ticks: { color: p.muted, font, autoSkip: !horizontal, autoSkipPadding: 12, maxRotation: 0 },
                     title: { display: !horizontal, text: label(s.xName, 60), color: p.muted, font } };
  if (horizontal) value.beginAtZero = true;
  const dataset = type === "bar"
    ? { data: s.items.map((d) => d.y), backgroundColor: p.bar, hoverBackgroundColor: p.bar, borderRadius: 2,
        barThickness: 20, maxBarThickness: 20 }
    : { data: s.items.map((d) => d.y), borderColor: p.bar, backgroundColor: p.panel, borderWidth: 2,
        pointRadius: s.items.length <= 120 ? 3.5 : 0, pointHoverRadius: 5, pointBorderWidth: 2, tension: 0 };
  new Chart(canvas, {
    type,
    data: { labels: s.items.map((d) => label(d.x, categoryChars)), datasets: [dataset] },
    options: {
      responsive: false,
      animation: false,
      indexAxis: horizontal ? "y" : "x",
      layout: { padding: { right: horizontal ? 56 : 8 } },
      scales: horizontal ? { x: value, y: category } : { x: category, y: value },
      plugins: {
        legend: { display: false },
        title: { display: true, text: title, align: "start", color: p.text,
                 font: { family: p.font, size: 12, weight: "600" } },
        tooltip: {
          callbacks: {
            title: (items) => (items.length ? label(s.items[items[0].dataIndex].x, 500) : ""),
            label: (item) => formatNumber(s.items[item.dataIndex].y),
          },
        },
        valueLabels: { enabled: horizontal, color: p.text, font },
      },
    },
    plugins: [VALUE_LABELS],
  });
  if (s.total > s.items.length) note(container, `The first ${s.items.length} of ${s.total} rows are drawn.`);
  return true;
}

/** Each bar's value written at its end (Chart.js draws no value labels itself). */
const VALUE_LABELS = {
  id: "valueLabels",
  afterDatasetsDraw(chart, _args, opts) {
    if (!opts.enabled) return;
    const { ctx } = chart;
    const values = chart.data.datasets[0].data;
    ctx.save();
    ctx.fillStyle = opts.color;
    ctx.font = `${opts.font.size}px ${opts.font.family}`;
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    chart.getDatasetMeta(0).data.forEach((bar, i) => {
      // right of the bar's end, or of the zero line for a negative value (the categories are on the left)
      ctx.fillText(formatNumber(values[i]), Math.max(bar.x, bar.base) + 4, bar.y);
    });
    ctx.restore();
  },
};

function drawBar(container, result, chart, label, W) {
  const s = seriesFrom(result, chart, MAX_BARS);
  if (!s) return false;
  const labelChars = Math.max(8, Math.floor(Math.min(160, W * 0.3) / 6.5));
  return plot(container, s, label, "bar", W, 28 + s.items.length * 26 + 44, true, labelChars);
}

function drawLine(container, result, chart, label, W) {
  const s = seriesFrom(result, chart, MAX_POINTS);
  if (!s) return false;
  const H = Math.round(Math.max(220, Math.min(320, W * 0.5)));
  return plot(container, s, label, "line", W, H, false, 12);
}
