// sqlweave web page: pick a database, ask, watch the stages, read and re-run the SQL, see the result.
//
// Every string from the server (values, names, SQL, explanations, errors, questions) is untrusted data:
// it reaches the DOM only through textContent / text nodes (see `appendVisible`), with invisible and
// control characters shown as visible escapes and long values shortened. No innerHTML, no inline
// script or style: the page runs under a strict Content-Security-Policy.

import { clearChart, drawChart } from "./chart.js";

// --------------------------------------------------------------------------------------------
// Showing untrusted text
// --------------------------------------------------------------------------------------------

/** Characters a person cannot see, or that change how the text around them is shown: the same rule as
 *  sqlweave.text.visible (Unicode categories Cc, Cf, Cs, Co, Cn, Zl, Zp, and Zs other than the space):
 *  C0/C1 controls, ESC, bidi overrides and isolates, zero-width characters, the BOM, lone surrogates. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/gu;

/** Values longer than this many characters are shortened (with a way to see all of them). */
export const MAX_CHARS = 500;

const SHORT_ESCAPES = { "\n": "\\n", "\t": "\\t", "\r": "\\r" };

function hex(n, width) {
  return n.toString(16).padStart(width, "0");
}

/** The visible escape of one character: \n, \t, \r, \x1b, \u202e or \U000e0041. */
function escapeChar(ch) {
  if (SHORT_ESCAPES[ch]) return SHORT_ESCAPES[ch];
  const cp = ch.codePointAt(0);
  if (cp < 0x100) return `\\x${hex(cp, 2)}`;
  if (cp < 0x10000) return `\\u${hex(cp, 4)}`;
  return `\\U${hex(cp, 8)}`;
}

/** Append `s` to `parent` as text, invisible characters as <span class="esc">\x1b</span>.
 *  Characters in `keep` (e.g. "\n\t" for SQL and messages) are left as they are. */
function appendVisible(parent, s, keep = "") {
  INVISIBLE.lastIndex = 0;
  let last = 0;
  let m;
  while ((m = INVISIBLE.exec(s)) !== null) {
    const ch = m[0];
    if (ch === " " || (keep && keep.includes(ch))) continue;
    if (m.index > last) parent.appendChild(document.createTextNode(s.slice(last, m.index)));
    const esc = document.createElement("span");
    esc.className = "esc";
    esc.textContent = escapeChar(ch);
    parent.appendChild(esc);
    last = m.index + ch.length;
  }
  if (last < s.length) parent.appendChild(document.createTextNode(s.slice(last)));
}

/** `s` with invisible characters escaped, as a plain string (for option labels, SVG text, tooltips). */
function visibleString(s, keep = "") {
  return s.replace(INVISIBLE, (ch) => (ch === " " || (keep && keep.includes(ch)) ? ch : escapeChar(ch)));
}

function isPair(s, i) {
  const c = s.charCodeAt(i);
  return c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
}

/** Code-unit index where the first `max` characters (code points) of `s` end, or -1 when `s` is not longer. */
function cutIndex(s, max) {
  if (s.length <= max) return -1;
  let points = 0;
  let i = 0;
  while (i < s.length && points < max) {
    i += isPair(s, i) ? 2 : 1;
    points += 1;
  }
  return i < s.length ? i : -1;
}

function codePoints(s) {
  let n = 0;
  for (let i = 0; i < s.length; i += isPair(s, i) ? 2 : 1) n++;
  return n;
}

function moreText(n) {
  return `… (${n} more character${n === 1 ? "" : "s"})`;
}

function asText(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  try {
    return jsonText(v);
  } catch {
    return String(v);
  }
}

/** An array or object cell as the CLI and CSV write it (sqlweave.cells.text_cell): JSON with ", " and ": ". */
function jsonText(v) {
  if (Array.isArray(v)) return `[${v.map(jsonText).join(", ")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${jsonText(x)}`).join(", ")}}`;
  }
  return JSON.stringify(v === undefined ? null : v);
}

/** Plain display text: escapes, and at most `max` characters (then "…"). */
function label(v, max = 80) {
  const s = asText(v);
  const cut = cutIndex(s, max);
  return cut < 0 ? visibleString(s) : `${visibleString(s.slice(0, cut))}…`;
}

/** Append a long untrusted value: the first MAX_CHARS characters, a marker saying how many more
 *  there are, and a button that shows the whole value. */
function appendLong(parent, s, keep = "", max = MAX_CHARS) {
  const cut = cutIndex(s, max);
  if (cut < 0) {
    appendVisible(parent, s, keep);
    return;
  }
  appendVisible(parent, s.slice(0, cut), keep);
  const more = document.createElement("span");
  more.className = "more";
  more.textContent = moreText(codePoints(s.slice(cut)));
  const btn = document.createElement("button");
  btn.type = "button";
  btn.className = "show-all";
  btn.textContent = "show all";
  btn.addEventListener("click", () => {
    parent.replaceChildren();
    appendVisible(parent, s, keep);
  });
  parent.append(more, btn);
}

/** An element with untrusted text inside. */
function el(tag, className, text, keep = "") {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) appendLong(node, asText(text), keep);
  return node;
}

/** An element with text that sqlweave itself wrote. */
function plain(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(text, onClick, className) {
  const b = plain("button", className, text);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

// --------------------------------------------------------------------------------------------
// SQL highlighting: Prism (vendor/prism-core.min.js, prism-sql.min.js) splits the SQL into tokens,
// each a span filled with textContent
// --------------------------------------------------------------------------------------------

/** Prism's SQL grammar with standard SQL's quoting (SQLite, PostgreSQL, DuckDB): 'text' is a string, "name",
 *  `name` and [name] are names. Prism's own follows MySQL, where "text" is a string. */
const SQL_GRAMMAR = globalThis.Prism && globalThis.Prism.languages.sql
  ? globalThis.Prism.languages.extend("sql", {
    string: { pattern: /'(?:[^']|'')*'?/, greedy: true },
    identifier: { pattern: /"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?/, greedy: true },
  })
  : null;

/** Split SQL into [kind, text] pieces: kind is Prism's token type ("keyword", "function", "string", "identifier",
 *  "number", "comment", "operator", "punctuation", ...) or "" for the text between tokens. Never fails on any
 *  input; without Prism, the whole text is one plain piece. */
export function tokenize(sql) {
  if (!SQL_GRAMMAR) return [["", sql]];
  const out = [];
  const walk = (tokens, kind) => {
    for (const t of tokens) {
      if (typeof t === "string") out.push([kind, t]);
      else if (typeof t.content === "string") out.push([t.type, t.content]);
      else walk(Array.isArray(t.content) ? t.content : [t.content], t.type);
    }
  };
  walk(globalThis.Prism.tokenize(sql, SQL_GRAMMAR), "");
  return out;
}

/** Fill `target` with highlighted `sql` (newlines and tabs kept, other invisible characters escaped). */
function renderSql(target, sql) {
  target.replaceChildren();
  for (const [kind, text] of tokenize(sql || "")) {
    if (!kind) {
      appendVisible(target, text, "\n\t");
      continue;
    }
    const span = document.createElement("span");
    span.className = `tok-${kind}`;
    appendVisible(span, text, "\n\t");
    target.appendChild(span);
  }
}

// --------------------------------------------------------------------------------------------
// Talking to the server
// --------------------------------------------------------------------------------------------

const KEY_STORE = "sqlweave.apiKey";
const DB_STORE = "sqlweave.database";
const PRESET_STORE = "sqlweave.preset";
const SCHEMA_FILTER_FROM = 9;  // tables: a schema this large gets a box to find a table or column in

class ApiError extends Error {
  constructor(status, body) {
    super(body.message || `request failed (${status})`);
    this.status = status;
    this.code = body.code || `http_${status}`;
    this.hint = body.hint || "";
    this.retryable = body.retryable === true;
  }
}

/** The stream endpoint is missing or the stream broke before anything arrived: use POST /api/ask. */
class StreamUnavailable extends Error {}

function storage() {
  try {
    return window.sessionStorage;
  } catch {
    return null;
  }
}

function apiKey() {
  return storage()?.getItem(KEY_STORE) || "";
}

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  const key = apiKey();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

async function errorBody(resp) {
  let data = null;
  const text = await resp.text().catch(() => "");
  try {
    data = JSON.parse(text);
  } catch {
    data = null;
  }
  let body;
  if (data && typeof data.error === "object" && data.error !== null) {
    body = data.error;
  } else if (data && data.detail !== undefined) {
    const detail = Array.isArray(data.detail)
      ? data.detail.map((d) => [asText((d.loc || []).slice(1).join(".")), asText(d.msg)].filter(Boolean).join(": ")).join("; ")
      : asText(data.detail);
    body = { code: resp.status === 422 ? "invalid_request" : `http_${resp.status}`, message: detail };
  } else {
    body = { code: `http_${resp.status}`, message: text.slice(0, 2000) || resp.statusText || `HTTP ${resp.status}` };
  }
  body = { code: asText(body.code), message: asText(body.message), hint: asText(body.hint),
    retryable: body.retryable === true || resp.status === 503 || resp.status === 429 };
  const retry = resp.headers.get("Retry-After");
  if (retry && !body.hint) body.hint = `The server is busy: try again in ${retry} s.`;
  return body;
}

const NETWORK_ERROR = {
  code: "network_error",
  message: "The server could not be reached.",
  hint: "Check that sqlweave serve is still running, then try again.",
  retryable: true,
};

async function request(method, path, body, { signal } = {}) {
  let resp;
  try {
    resp = await fetch(path, {
      method,
      headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: "no-store",
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, NETWORK_ERROR);
  }
  if (!resp.ok) {
    const err = new ApiError(resp.status, await errorBody(resp));
    if (resp.status === 401) needKey(err);
    throw err;
  }
  return resp;
}

async function api(method, path, body, options) {
  const resp = await request(method, path, body, options);
  if (resp.status === 204) return null;
  return resp.json();
}

const enc = encodeURIComponent;

/** Parse server-sent events from a fetch body; calls onEvent(name, data) per event. */
async function readEvents(resp, onEvent) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const flush = (final) => {
    // Normalise line ends; a \r at the very end may be the first half of \r\n still to come.
    let held = "";
    if (!final && buffer.endsWith("\r")) {
      held = "\r";
      buffer = buffer.slice(0, -1);
    }
    buffer = buffer.replace(/\r\n|\r/g, "\n");
    let idx;
    while ((idx = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, idx);
      buffer = buffer.slice(idx + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line === "" || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "event") name = value;
        else if (field === "data") data.push(value);
      }
      if (data.length) onEvent(name, data.join("\n"));
    }
    buffer += held;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      buffer += decoder.decode();
      buffer += "\n\n";
      flush(true);
      return;
    }
    buffer += decoder.decode(value, { stream: true });
    flush(false);
  }
}

/** POST /api/ask/stream; `on.queued(data)`, `on.stage(data)` as they arrive; resolves to the answer. */
async function askStream(body, signal, on) {
  let resp;
  try {
    resp = await fetch("/api/ask/stream", {
      method: "POST",
      headers: Object.assign(headers(true), { Accept: "text/event-stream" }),
      body: JSON.stringify(body),
      signal,
      cache: "no-store",
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new StreamUnavailable("stream request failed");
  }
  if ([404, 405, 501].includes(resp.status)) throw new StreamUnavailable(`stream endpoint answered ${resp.status}`);
  if (!resp.ok) {
    const err = new ApiError(resp.status, await errorBody(resp));
    if (resp.status === 401) needKey(err);
    throw err;
  }
  const type = resp.headers.get("Content-Type") || "";
  if (type.includes("application/json")) return resp.json();
  if (!type.includes("text/event-stream") || !resp.body) throw new StreamUnavailable("not an event stream");

  let answer = null;
  let failure = null;
  let seen = 0;
  try {
    await readEvents(resp, (name, raw) => {
      let data;
      try {
        data = JSON.parse(raw);
      } catch {
        return;
      }
      seen += 1;
      if (name === "queued") on.queued(data);
      else if (name === "running") on.running(data);
      else if (name === "progress") on.progress(data);
      else if (name === "stage") on.stage(data);
      else if (name === "answer") answer = data;
      else if (name === "error") failure = data && typeof data === "object" ? data : { message: asText(data) };
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    if (seen === 0) throw new StreamUnavailable("the stream broke before any event");
    throw new ApiError(0, { code: "stream_broken", message: "The connection broke before the answer arrived.", hint: "Ask again." });
  }
  if (failure) {
    throw new ApiError(0, { code: asText(failure.code || "error"), message: asText(failure.message), hint: asText(failure.hint) });
  }
  if (answer) return answer;
  if (seen === 0) throw new StreamUnavailable("empty stream");
  throw new ApiError(0, { code: "stream_ended", message: "The stream ended before the answer arrived.", hint: "Ask again." });
}

// --------------------------------------------------------------------------------------------
// Page state and elements
// --------------------------------------------------------------------------------------------

const $ = (id) => document.getElementById(id);

const PAGE_SIZE = 25;

const state = {
  databases: [],
  defaultPreset: "",     // the preset the server answers with when a request names none
  db: null,
  conversationId: null,
  answer: null,          // the last AnswerOut
  question: "",          // the question the SQL panel belongs to
  sql: "",               // the SQL shown in the SQL panel
  editing: false,
  result: null,          // {columns, rows, row_count, truncated, elapsed_s}
  resultSql: "",         // the SQL whose result is shown (for CSV)
  view: [],              // result rows in display order
  sort: { col: -1, dir: 1 },
  page: 0,
  chart: null,           // the server's chart choice for the shown result
  chartWidth: 0,
  inflight: null,        // AbortController of the running ask
  timer: null,
  generation: 0,         // bumps when the database changes, so stale answers are dropped
};

// An error the server calls retryable (a database server away, a busy model) gets a "Try again" button that
// repeats what failed (`retry`), once per click.
function showError(container, err, retry) {
  container.replaceChildren();
  const code = err && err.code ? err.code : "error";
  const message = err && err.message ? err.message : String(err);
  container.appendChild(el("span", "err-code", code));
  container.appendChild(el("span", "err-message", message, "\n\t"));
  if (err && err.hint) container.appendChild(el("span", "err-hint", err.hint, "\n\t"));
  if (err && err.retryable === true && typeof retry === "function") {
    const again = plain("button", "err-retry", "Try again");
    again.type = "button";
    again.addEventListener("click", () => {
      again.disabled = true;
      retry();
    });
    container.appendChild(again);
  }
  container.hidden = false;
}

function pageError(err) {
  if (!err) {
    $("page-error").hidden = true;
    return;
  }
  showError($("page-error"), err);
}

function needKey(err) {
  $("key-form").hidden = false;
  pageError({
    code: err.code || "unauthorized",
    message: apiKey() ? "The API key was not accepted." : "This server needs an API key.",
    hint: "Enter the key in the API key field at the top of the page.",
  });
  $("key-input").focus();
}

// --------------------------------------------------------------------------------------------
// Health, databases, schema, suggestions
// --------------------------------------------------------------------------------------------

async function loadHealth() {
  try {
    const h = await api("GET", "/api/health");
    const parts = [];
    if (h.model) parts.push(`model ${label(h.model, 60)}`);
    if (h.queue) parts.push(`queue ${asText(h.queue.running)} running, ${asText(h.queue.waiting)} waiting`);
    if (h.version) parts.push(`v${label(h.version, 20)}`);
    $("health").textContent = parts.join(" · ");
  } catch {
    $("health").textContent = "";
  }
}

/** The methods (pipeline presets) the server measured, offered with what each costs; the server's default first. */
async function loadPresets() {
  let data;
  try {
    data = await api("GET", "/api/presets");
  } catch {
    return;  // an older server, or no key yet: answers use the server's default
  }
  const fallback = asText(data.default);
  const all = Array.isArray(data.presets) ? data.presets : [];
  const shown = all.filter((p) => asText(p.name) === fallback || Number.isFinite(p.spider_dev_ex));
  shown.sort((a, b) => (asText(b.name) === fallback) - (asText(a.name) === fallback));
  const select = $("preset");
  select.replaceChildren();
  for (const p of shown) {
    const opt = document.createElement("option");
    opt.value = asText(p.name);
    const bits = [];  // short enough for a phone's width; the option's title says it whole
    const said = [];
    if (Number.isFinite(p.spider_dev_ex)) {
      bits.push(`${p.spider_dev_ex.toFixed(1)}% on Spider`);
      said.push(`${p.spider_dev_ex.toFixed(1)}% of the Spider dev questions answered right`);
    }
    if (Number.isFinite(p.server_median_seconds) && Number(p.server_answers) > 0) {
      bits.push(`${p.server_median_seconds.toFixed(1)} s here`);
      said.push(`a median of ${p.server_median_seconds.toFixed(1)} s a question on this server (its last ${asText(p.server_answers)} answers)`);
    } else if (Number.isFinite(p.median_seconds)) {
      bits.push(`${p.median_seconds.toFixed(0)} s on 2 cores`);
      said.push(`a median of ${p.median_seconds.toFixed(1)} s a question on a 2-core reference machine (not yet timed on this server)`);
    }
    opt.textContent = label(p.name, 40) + (bits.length ? `: ${bits.join(", ")}` : "");
    opt.title = [said.join(", "), `made of ${label(p.made_of, 200)}`].filter(Boolean).join("; ");
    select.appendChild(opt);
  }
  state.defaultPreset = fallback;
  const names = shown.map((p) => asText(p.name));
  const remembered = storage()?.getItem(PRESET_STORE);
  select.value = names.includes(remembered) ? remembered : fallback;
  const offer = names.length > 1;
  select.hidden = !offer;
  $("preset-label").hidden = !offer;
}

async function loadDatabases() {
  let data;
  try {
    data = await api("GET", "/api/databases");
  } catch (err) {
    if (err.status !== 401) pageError(err);
    return;
  }
  pageError(null);
  $("key-form").hidden = true;
  state.databases = Array.isArray(data.databases) ? data.databases : [];
  const select = $("db-select");
  select.replaceChildren();
  for (const db of state.databases) {
    const opt = document.createElement("option");
    opt.value = asText(db.name);
    opt.textContent = label(db.name, 60);
    if (db.description) opt.title = label(db.description, 300);
    select.appendChild(opt);
  }
  if (state.databases.length === 0) {
    pageError({ code: "no_databases", message: "The server has no databases configured.",
                hint: "Start it with --db NAME=PATH or --demo." });
    return;
  }
  const names = state.databases.map((d) => asText(d.name));
  const remembered = storage()?.getItem(DB_STORE);
  const pick = names.includes(remembered) ? remembered : names[0];
  select.value = pick;
  await selectDatabase(pick);
}

async function selectDatabase(name) {
  state.generation += 1;
  if (state.inflight) state.inflight.abort();  // an answer about the other database is no longer wanted
  $("progress").hidden = true;
  state.db = name;
  storage()?.setItem(DB_STORE, name);
  startNewConversation();
  clearAnswer();
  const info = state.databases.find((d) => asText(d.name) === name);
  const desc = $("db-description");
  desc.replaceChildren();
  if (info && info.description) appendLong(desc, asText(info.description));
  await Promise.all([loadSchema(name), loadSuggestions(name), loadConversations()]);
}

async function loadSchema(name) {
  const box = $("schema");
  box.replaceChildren(plain("p", "muted", "Loading…"));
  let schema;
  try {
    schema = await api("GET", `/api/databases/${enc(name)}/schema`);
  } catch (err) {
    const e = plain("div", "error");
    showError(e, err);
    box.replaceChildren(e);
    return;
  }
  if (name !== state.db) return;
  box.replaceChildren();
  const fks = new Map();
  for (const fk of schema.foreign_keys || []) {
    fks.set(`${asText(fk.table)}\u0000${asText(fk.column)}`, fk);
  }
  const tables = schema.tables || [];
  if (tables.length === 0) box.appendChild(plain("p", "muted", "No tables."));
  if (schema.keys_from_data) {
    box.appendChild(plain("p", "muted schema-note", "Keys read from the data: the database declares none."));
  }
  if (Array.isArray(schema.schemas) && schema.schemas.length > 1) {
    box.appendChild(el("p", "muted schema-note", `Schemas, in the order a name is looked up: ${schema.schemas.map(asText).join(", ")}`));
  }
  if (Array.isArray(schema.shadowed) && schema.shadowed.length > 0) {
    box.appendChild(el("p", "muted schema-note", `Not read, an earlier schema has a table of the same name: ${schema.shadowed.map(asText).join(", ")}`));
  }
  const entries = [];  // each table's box and the text a search looks in
  if (tables.length >= SCHEMA_FILTER_FROM) {
    const find = document.createElement("input");
    find.type = "search";
    find.id = "schema-filter";
    find.className = "schema-filter";
    find.placeholder = "Find a table or column";
    find.setAttribute("aria-label", "Find a table or column");
    find.autocomplete = "off";
    const count = plain("p", "muted small schema-count", "");
    count.id = "schema-count";
    count.setAttribute("aria-live", "polite");
    find.addEventListener("input", () => filterSchema(entries, find.value, count));
    box.append(find, count);
  }
  for (const table of tables) {
    const det = document.createElement("details");
    det.className = "schema-table";
    const sum = document.createElement("summary");
    sum.appendChild(el("span", "table-name", table.name));
    const cols = table.columns || [];
    const rowsKnown = Number.isInteger(table.row_count);
    const rowText = rowsKnown ? ` · ${table.row_count} row${table.row_count === 1 ? "" : "s"}` : "";
    sum.appendChild(plain("span", "count", ` (${cols.length} column${cols.length === 1 ? "" : "s"}${rowText})`));
    det.appendChild(sum);
    if (table.description) det.appendChild(el("p", "table-desc", table.description));
    const ul = document.createElement("ul");
    for (const col of cols) {
      const li = document.createElement("li");
      li.appendChild(el("span", "col-name", col.name));
      if (col.type) li.appendChild(el("span", "col-type", col.type));
      if (col.primary_key) {
        const b = plain("span", "badge pk", "PK");
        b.title = "primary key";
        li.appendChild(b);
      }
      const fk = fks.get(`${asText(table.name)}\u0000${asText(col.name)}`);
      if (fk) {
        const b = plain("span", "badge fk", `→ ${label(fk.ref_table, 60)}.${label(fk.ref_column, 60)}`);
        b.title = "foreign key";
        li.appendChild(b);
      }
      if (col.description) li.appendChild(el("span", "col-desc", col.description));
      ul.appendChild(li);
    }
    det.appendChild(ul);
    box.appendChild(det);
    entries.push({
      det,
      table: `${asText(table.name)} ${asText(table.description)}`.toLowerCase(),
      columns: cols.map((c, i) => [ul.children[i], `${asText(c.name)} ${asText(c.description)}`.toLowerCase()]),
    });
  }
}

/** Show the tables whose name, description, or a column's name or description holds ``query`` (any case); a table
 * found by a column opens, with that column marked. The count says how many are shown. */
function filterSchema(entries, query, count) {
  const q = query.trim().toLowerCase();
  let shown = 0;
  for (const e of entries) {
    let byColumn = false;
    for (const [li, text] of e.columns) {
      const hit = q !== "" && text.includes(q);
      li.classList.toggle("schema-hit", hit);
      byColumn = byColumn || hit;
    }
    const visible = q === "" || e.table.includes(q) || byColumn;
    e.det.hidden = !visible;
    if (byColumn && !e.det.open) {
      e.det.open = true;
      e.det.dataset.openedBySearch = "1";
    } else if (!byColumn && e.det.dataset.openedBySearch) {
      e.det.open = false;
      delete e.det.dataset.openedBySearch;
    }
    shown += visible;
  }
  count.textContent = q === "" ? "" : shown === 0 ? "No table or column matches."
    : `${shown} of ${entries.length} tables`;
}

async function loadSuggestions(name) {
  const box = $("suggestions");
  box.replaceChildren();
  let data;
  try {
    data = await api("GET", `/api/databases/${enc(name)}/suggestions`);
  } catch {
    box.appendChild(plain("span", "muted", "No suggestions."));
    return;
  }
  if (name !== state.db) return;
  const questions = Array.isArray(data.questions) ? data.questions : [];
  if (questions.length === 0) box.appendChild(plain("span", "muted", "No suggestions."));
  for (const q of questions) {
    const text = asText(q);
    const chip = document.createElement("button");
    chip.type = "button";
    chip.className = "chip";
    appendLong(chip, text, "", 200);
    chip.addEventListener("click", () => {
      $("question").value = text;
      ask(text);
    });
    box.appendChild(chip);
  }
}

// --------------------------------------------------------------------------------------------
// Conversations
// --------------------------------------------------------------------------------------------

function startNewConversation() {
  state.conversationId = null;
  $("turns").replaceChildren();
  $("conversation-panel").hidden = true;
  $("conversation-title").textContent = "";
  $("follow-up-note").hidden = true;
  $("suggestions-box").open = true;
  markCurrentConversation();
}

async function loadConversations() {
  const list = $("conversations");
  if (!state.db) return;
  const db = state.db;
  let data;
  try {
    data = await api("GET", `/api/conversations?database=${enc(db)}`);
  } catch (err) {
    const li = plain("li", "empty");
    li.appendChild(el("span", "", `Conversations are not available (${err.code}).`));
    list.replaceChildren(li);
    return;
  }
  if (db !== state.db) return;
  list.replaceChildren();
  const convs = Array.isArray(data.conversations) ? data.conversations : [];
  if (convs.length === 0) list.appendChild(plain("li", "empty", "None yet."));
  for (const c of convs) {
    const li = document.createElement("li");
    li.dataset.id = asText(c.id);
    const open = document.createElement("button");
    open.type = "button";
    open.className = "conv-open";
    open.appendChild(el("span", "conv-title", c.title || "(untitled)"));
    const n = Number(c.turn_count) || 0;
    const when = c.updated_at || c.created_at;
    open.appendChild(plain("span", "conv-meta", `${n} question${n === 1 ? "" : "s"}${when ? ` · ${when_(when)}` : ""}`));
    open.addEventListener("click", () => openConversation(asText(c.id)));
    const del = button("Delete", () => deleteConversation(asText(c.id)), "danger");
    del.setAttribute("aria-label", `Delete conversation ${label(c.title || "", 80)}`);
    li.append(open, del);
    list.appendChild(li);
  }
  markCurrentConversation();
}

/** A server time stamp for people: "2026-11-23 15:24" in local time, or the text as given. */
function when_(stamp) {
  const d = new Date(asText(stamp));
  if (Number.isNaN(d.getTime())) return label(stamp, 40);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

function markCurrentConversation() {
  for (const li of $("conversations").children) {
    li.classList.toggle("current", !!state.conversationId && li.dataset.id === String(state.conversationId));
  }
}

async function openConversation(id) {
  let conv;
  try {
    conv = await api("GET", `/api/conversations/${enc(id)}`);
  } catch (err) {
    pageError(err);
    return;
  }
  pageError(null);
  if (conv.database && asText(conv.database) !== state.db && state.databases.some((d) => asText(d.name) === asText(conv.database))) {
    $("db-select").value = asText(conv.database);
    await selectDatabase(asText(conv.database));
  }
  clearAnswer();
  state.conversationId = conv.id;
  renderTurns(conv);
  markCurrentConversation();
}

async function deleteConversation(id) {
  try {
    await api("DELETE", `/api/conversations/${enc(id)}`);
  } catch (err) {
    pageError(err);
    return;
  }
  if (String(state.conversationId) === String(id)) startNewConversation();
  await loadConversations();
}

async function refreshConversation() {
  if (state.conversationId === null || state.conversationId === undefined) return;
  try {
    const conv = await api("GET", `/api/conversations/${enc(state.conversationId)}`);
    renderTurns(conv);
  } catch {
    // the answer is shown already; the list catches up next time
  }
}

function renderTurns(conv) {
  const list = $("turns");
  list.replaceChildren();
  const turns = Array.isArray(conv.turns) ? conv.turns : [];
  $("conversation-panel").hidden = turns.length === 0;
  $("conversation-title").replaceChildren();
  if (conv.title) appendLong($("conversation-title"), asText(conv.title), "", 120);
  $("follow-up-note").hidden = state.conversationId === null;
  for (const t of turns) {
    const li = document.createElement("li");
    li.className = t.ok === false ? "turn failed" : "turn";
    if (t.number !== undefined) li.value = Number(t.number) || 0;
    li.appendChild(el("div", "turn-q", t.question));
    const meta = plain("div", "turn-meta");
    if (t.builds_on) meta.appendChild(plain("span", "builds-on", `builds on question ${asText(t.builds_on)}`));
    if (t.ok !== false && t.row_count !== null && t.row_count !== undefined) {
      meta.appendChild(plain("span", "", `${asText(t.row_count)} row${Number(t.row_count) === 1 ? "" : "s"}`));
    }
    if (t.error_code) meta.appendChild(el("span", "", `error: ${asText(t.error_code)}`));
    if (t.sql) {
      meta.appendChild(button("Show result", () => showTurn(t), "link"));
    }
    li.appendChild(meta);
    if (t.sql) {
      const pre = plain("pre", "sql");
      const code = document.createElement("code");
      renderSql(code, asText(t.sql));
      pre.appendChild(code);
      li.appendChild(pre);
    }
    list.appendChild(li);
  }
}

function showTurn(turn) {
  clearAnswer();
  state.answer = null;
  state.question = asText(turn.question);
  $("answer").hidden = false;
  $("feedback").hidden = true;
  setSql(asText(turn.sql));
  runSql();
}

// --------------------------------------------------------------------------------------------
// Asking
// --------------------------------------------------------------------------------------------

function startTimer() {
  const t0 = performance.now();
  stopTimer();
  state.running = null;
  let polled = 0;
  const tick = () => {
    const now = performance.now();
    $("elapsed").textContent = `${((now - t0) / 1000).toFixed(1)} s`;
    const r = state.running;
    if (r) $("queue-status").textContent = `${r.label}… ${((now - r.since) / 1000).toFixed(0)} s`;
    if (now - polled > 1000) {  // the header's queue, kept true while the question runs
      polled = now;
      loadHealth();
    }
  };
  tick();
  state.timer = setInterval(tick, 100);
}

/** A stage starts: say what is being done now, in words, with its own elapsed time. */
function stageRunning(d) {
  state.running = { label: asText(d.label || d.stage || "Working"), since: performance.now() };
  $("queue-status").textContent = `${state.running.label}…`;
}

/** One of a stage's samples is drawn: "Trying other readings 2/4". */
function stageProgress(d) {
  const done = Number(d.done), total = Number(d.total);
  if (!Number.isFinite(done) || !Number.isFinite(total)) return;
  const since = state.running ? state.running.since : performance.now();
  const now = Math.min(done + 1, total);  // done of those asked for: the next one is being drawn now
  state.running = { label: `${asText(d.label || d.stage || "Working")} ${now}/${total}`, since };
}

function stopTimer() {
  if (state.timer) clearInterval(state.timer);
  state.timer = null;
}

function addStage(s) {
  const li = document.createElement("li");
  if (s.error) li.classList.add("failed");
  const name = el("span", "stage-name", asText(s.label || s.stage));
  name.title = asText(s.stage);  // the stage's own name, as the trace and the API call it
  li.appendChild(name);
  const secs = Number(s.seconds);
  const bits = [];
  if (Number.isFinite(secs)) bits.push(`${secs.toFixed(2)} s`);
  const pt = Number(s.prompt_tokens) || 0;
  const ct = Number(s.completion_tokens) || 0;
  if (pt || ct) bits.push(`${pt} → ${ct} tokens`);
  li.appendChild(plain("span", "stage-secs", bits.join(" · ")));
  if (s.error) li.appendChild(el("span", "stage-error", s.error));
  $("stages").appendChild(li);
}

function setBusy(busy) {
  $("ask-button").disabled = busy;
  $("cancel-button").hidden = !busy;
  for (const chip of $("suggestions").querySelectorAll("button")) chip.disabled = busy;
}

async function ask(question) {
  question = (question || "").trim();
  if (!state.db) return;
  if (!question) {  // say why nothing happens
    $("question-note").textContent = "Type a question first, for example one of the suggestions.";
    $("question-note").hidden = false;
    $("question").focus();
    return;
  }
  $("question-note").hidden = true;
  if (state.inflight) state.inflight.abort();
  const ctrl = new AbortController();
  state.inflight = ctrl;
  const generation = state.generation;
  const body = { database: state.db, question };
  const preset = $("preset").value;
  if (preset && preset !== state.defaultPreset) body.preset = preset;
  const minConfidence = Number.parseFloat($("min-confidence").value);
  if (Number.isFinite(minConfidence)) body.min_confidence = minConfidence;
  if (state.conversationId !== null && state.conversationId !== undefined) body.conversation_id = state.conversationId;
  else body.new_conversation = true;

  clearAnswer();
  $("progress").hidden = false;
  $("progress-details").open = true;
  $("progress-summary").textContent = "";
  $("stages").replaceChildren();
  $("queue-status").textContent = "Sending…";
  setBusy(true);
  startTimer();
  let answer;
  try {
    try {
      answer = await askStream(body, ctrl.signal, {
        queued: (d) => {
          const pos = Number(d.position);
          $("queue-status").textContent = Number.isFinite(pos) && pos > 0
            ? `Waiting for the model: number ${pos} in the queue.` : "Starting…";
        },
        running: stageRunning,
        progress: stageProgress,
        stage: addStage,
      });
    } catch (err) {
      if (!(err instanceof StreamUnavailable)) throw err;
      $("queue-status").textContent = "Working… (no live progress)";
      answer = await api("POST", "/api/ask", body, { signal: ctrl.signal });
    }
    if (generation !== state.generation) return;
    $("queue-status").textContent = answer.error ? "Finished without an answer." : "Done.";
    if ($("stages").children.length === 0 && Array.isArray(answer.trace)) {
      for (const s of answer.trace) addStage(s);
      $("queue-status").textContent = answer.error ? "Finished without an answer." : "Done.";
    }
    showAnswer(answer);
    finishProgress(answer);
    if (!answer.error) $("question").value = "";
  } catch (err) {
    if (generation !== state.generation) return;
    if (err.name === "AbortError") {
      $("queue-status").textContent = "Stopped.";
    } else {
      // Refused before any model time (a question too long, a bad request): nothing was asked of the model.
      const refused = err.status >= 400 && err.status < 500 && err.status !== 429;
      $("queue-status").textContent = refused ? "Not asked: see why below." : "Failed.";
      $("answer").hidden = false;
      $("feedback").hidden = true;
      $("sql-box").hidden = true;  // the SQL of an earlier answer is not this question's
      showError($("answer-error"), err, refused ? undefined : () => ask(question));
      $("answer-meta").replaceChildren();
    }
  } finally {
    if (state.inflight === ctrl) {
      state.inflight = null;
      stopTimer();
      setBusy(false);
      bump("asked");
    }
  }
  if (generation === state.generation) {
    await Promise.all([refreshConversation(), loadConversations(), loadHealth()]);
  }
}

/** Count finished actions on <body data-…> (tests and scripts can wait for them). */
function bump(name) {
  document.body.dataset[name] = String((Number(document.body.dataset[name]) || 0) + 1);
}

/** After the answer: fold the stage list into one line (it stays one click away). */
function finishProgress(answer) {
  const n = $("stages").children.length;
  const total = answer.timings && Number.isFinite(Number(answer.timings.total_s)) ? Number(answer.timings.total_s) : null;
  const parts = [`${n} stage${n === 1 ? "" : "s"}`];
  if (total !== null) parts.push(`${total.toFixed(2)} s`);
  if (answer.error) parts.push("no answer");
  $("progress-summary").textContent = parts.join(" · ");
  $("progress-details").open = !!answer.error;
}

function clearAnswer() {
  $("answer").hidden = true;
  $("answer-error").hidden = true;
  $("answer-meta").replaceChildren();
  $("sql-error").hidden = true;
  $("explanation").hidden = true;
  $("chart").hidden = true;
  clearChart($("chart"));
  $("result").hidden = true;
  $("readings").hidden = true;
  $("readings-list").replaceChildren();
  $("cautions").hidden = true;
  $("cautions").replaceChildren();
  $("correction").hidden = true;
  $("feedback-status").textContent = "";
  $("feedback-status").className = "muted";
  $("feedback").hidden = false;
  for (const id of ["thumbs-up", "thumbs-down"]) $(id).disabled = false;
  state.result = null;
  state.resultSql = "";
  setEditing(false);
}

function showAnswer(a) {
  state.answer = a;
  $("sql-box").hidden = false;
  state.question = asText(a.question);
  if (a.conversation_id !== null && a.conversation_id !== undefined) {
    state.conversationId = a.conversation_id;
    $("follow-up-note").hidden = false;
    $("suggestions-box").open = false;  // one click away while a conversation goes on
  }
  $("answer").hidden = false;

  const meta = $("answer-meta");
  meta.replaceChildren();
  if (a.turn) meta.appendChild(plain("span", "turn-no", `Question ${asText(a.turn)} of this conversation`));
  if (a.builds_on) meta.appendChild(plain("span", "builds-on", `builds on question ${asText(a.builds_on)}`));
  if (a.restated) {
    const r = plain("span", "restated", `read as: “${asText(a.restated)}”`);
    r.title = "Your follow-up, restated on its own with what it refers to in the earlier questions; this is the question that was answered.";
    meta.appendChild(r);
  }
  if (!a.error && a.confidence !== null && a.confidence !== undefined && Number.isFinite(Number(a.confidence))) {
    const c = plain("span", "confidence");
    c.append("confidence ", plain("strong", "", `${Math.round(Number(a.confidence) * 100)}%`));
    c.title = "Calibrated chance that this answer is right";
    meta.appendChild(c);
  }
  showReadings(a);
  showCautions(a);
  const t = a.timings || {};
  if (t.total_s !== undefined && t.total_s !== null) {
    const parts = [`${Number(t.total_s).toFixed(2)} s`];
    if (Number(t.queue_wait_s) > 0) parts.push(`${Number(t.queue_wait_s).toFixed(2)} s waiting`);
    if (t.model_calls !== undefined) parts.push(`${asText(t.model_calls)} model call${Number(t.model_calls) === 1 ? "" : "s"}`);
    meta.appendChild(plain("span", "timings", parts.join(" · ")));
  }

  if (a.error) showError($("answer-error"), a.error, () => ask(asText(a.question)));
  setSql(asText(a.sql || ""));
  // A refused statement has nothing to judge right or wrong (nothing ran); a failed query can still be corrected.
  const refused = !!a.error && ["refused_statement", "access_denied"].includes(asText(a.error.code));
  const canJudge = !!a.answer_id && !!a.sql && !refused;
  $("feedback").hidden = !canJudge;
  if (Array.isArray(a.columns) && Array.isArray(a.rows) && !a.error) {
    showResult({ columns: a.columns, rows: a.rows, row_count: a.row_count, truncated: a.truncated }, a.chart, asText(a.sql));
  }
}

// --------------------------------------------------------------------------------------------
// The SQL panel: highlighted view, editor, run, explain
// --------------------------------------------------------------------------------------------

/** What to check before trusting the rows (a sum a join counts more than once): text that holds the model's SQL. */
function showCautions(a) {
  const list = $("cautions");
  list.replaceChildren();
  const cautions = Array.isArray(a.cautions) && !a.error ? a.cautions : [];
  for (const c of cautions) {
    const item = plain("li", "caution", "Caution: ");
    item.appendChild(el("span", "", c));
    list.appendChild(item);
  }
  list.hidden = cautions.length === 0;
}

/** An unsure answer: say so and show each leading reading (its SQL, first rows, and a button to use it). */
function showReadings(a) {
  const readings = Array.isArray(a.readings) ? a.readings : [];
  if (!a.unsure || readings.length === 0) return;
  const pct = Math.round(Number(a.confidence) * 100);
  $("readings-note").textContent = readings.length > 1
    ? `Not sure (confidence ${Number.isFinite(pct) ? pct : 0}%): the question can be read two ways. The answer below is reading 1.`
    : `Not sure (confidence ${Number.isFinite(pct) ? pct : 0}%): sampling the model again found no other reading; check this one.`;
  const list = $("readings-list");
  readings.forEach((r, i) => {
    const box = plain("div", "reading");
    const share = Math.round(Number(r.share) * 100);
    box.appendChild(plain("h3", "small-title", `Reading ${i + 1} · ${Number.isFinite(share) ? share : 0}% of sampled answers`));
    const pre = document.createElement("pre");
    pre.className = "sql";
    const code = document.createElement("code");
    renderSql(code, asText(r.sql || ""));
    pre.appendChild(code);
    box.appendChild(pre);
    const columns = Array.isArray(r.columns) ? r.columns : [];
    const rows = Array.isArray(r.rows) ? r.rows : [];
    const table = plain("table", "result-table");
    const hr = document.createElement("tr");
    for (const name of columns) {
      const th = document.createElement("th");
      appendLong(th, asText(name), "", 200);
      hr.appendChild(th);
    }
    table.appendChild(hr);
    for (const row of rows.slice(0, 5)) {
      const tr = document.createElement("tr");
      for (let j = 0; j < columns.length; j++) tr.appendChild(cell(Array.isArray(row) ? row[j] : null));
      table.appendChild(tr);
    }
    const wrap = plain("div", "table-wrap");  // a wide reading scrolls in its own box, not the page
    wrap.appendChild(table);
    box.appendChild(wrap);
    if (rows.length > 5) box.appendChild(plain("p", "muted", `${rows.length - 5} more row${rows.length === 6 ? "" : "s"}`));
    if (i > 0) {
      box.appendChild(button("Use this reading", () => {
        setSql(asText(r.sql || ""));
        showResult({ columns, rows, row_count: rows.length, truncated: r.truncated }, null, asText(r.sql || ""));
      }, "use-reading"));
    }
    list.appendChild(box);
  });
  $("readings").hidden = false;
}

function setSql(sql) {
  state.sql = sql;
  renderSql($("sql-code"), sql);
  $("sql-editor").value = sql;
  $("explanation").hidden = true;
  $("sql-error").hidden = true;
  $("sql-view").hidden = state.editing || sql === "";
  if (sql === "" && !state.editing) {
    $("sql-code").appendChild(plain("span", "muted", "(no SQL)"));
    $("sql-view").hidden = false;
  }
}

function setEditing(on) {
  state.editing = on;
  $("sql-editor").hidden = !on;
  $("sql-view").hidden = on;
  const b = $("edit-sql");
  b.textContent = on ? "Done editing" : "Edit";
  b.setAttribute("aria-pressed", on ? "true" : "false");
  b.classList.toggle("active", on);
}

function toggleEdit() {
  if (state.editing) {
    const sql = $("sql-editor").value;
    setEditing(false);
    setSql(sql);
  } else {
    $("sql-editor").value = state.sql;
    setEditing(true);
    $("sql-editor").focus();
  }
}

// After Edit + Run the result on screen is the user's own query's: the model's confidence no longer speaks for it.
function markOwnQuery(sql) {
  const a = state.answer;
  if (!a || sql.trim() === asText(a.sql || "").trim()) return;
  const c = document.querySelector("#answer-meta .confidence");
  if (c) {
    const own = plain("span", "confidence own-query", "your query");
    own.title = "The result shown is of the SQL you edited and ran; the model's confidence was for its own SQL.";
    c.replaceWith(own);
  }
}

// The SQL whose result is on screen, when the user edited and ran the answer's SQL (else null).
function editedSql() {
  const a = state.answer;
  const shown = state.resultSql || "";
  return a && shown.trim() && shown.trim() !== asText(a.sql || "").trim() ? shown : null;
}

function currentSql() {
  return state.editing ? $("sql-editor").value : state.sql;
}

async function runSql() {
  const sql = currentSql();
  if (!sql.trim() || !state.db) return;
  const runBtn = $("run-sql");
  runBtn.disabled = true;
  $("sql-error").hidden = true;
  try {
    const res = await api("POST", "/api/sql", { database: state.db, sql });
    state.sql = sql;
    renderSql($("sql-code"), sql);
    $("answer-error").hidden = true;
    showResult(res, res.chart, sql);
    markOwnQuery(sql);
  } catch (err) {
    showError($("sql-error"), err, runSql);
  } finally {
    runBtn.disabled = false;
    bump("ran");
  }
}

async function explainSql() {
  const sql = currentSql();
  if (!sql.trim() || !state.db) return;
  const btn = $("explain-sql");
  btn.disabled = true;
  btn.textContent = "Explaining…";
  const box = $("explanation");
  const text = $("explanation-text");
  try {
    const body = { database: state.db, sql };
    if (state.question) body.question = state.question;
    const res = await api("POST", "/api/explain", body);
    text.replaceChildren();
    appendLong(text, asText(res.explanation), "\n\t", 5000);
    box.hidden = false;
  } catch (err) {
    showError($("sql-error"), err);
  } finally {
    btn.disabled = false;
    btn.textContent = "Explain";
  }
}

function writeSqlYourself() {
  clearAnswer();
  $("sql-box").hidden = false;
  state.answer = null;
  state.question = "";
  $("answer").hidden = false;
  $("feedback").hidden = true;
  setSql("");
  setEditing(true);
  $("sql-editor").value = "";
  $("sql-editor").focus();
}

// --------------------------------------------------------------------------------------------
// The result: table (sortable, paginated), chart, CSV
// --------------------------------------------------------------------------------------------

function showResult(res, chart, sql) {
  const columns = Array.isArray(res.columns) ? res.columns : [];
  const rows = Array.isArray(res.rows) ? res.rows : [];
  state.result = { columns, rows, row_count: res.row_count ?? rows.length, truncated: !!res.truncated, elapsed_s: res.elapsed_s };
  state.resultSql = sql;
  state.view = rows.slice();
  state.sort = { col: -1, dir: 1 };
  state.page = 0;
  $("result").hidden = false;

  const n = state.result.row_count;
  let summary = `${n} row${n === 1 ? "" : "s"}`;
  if (state.result.truncated) summary += ` (only the first ${rows.length} were returned)`;
  if (res.elapsed_s !== undefined && res.elapsed_s !== null) summary += ` · ${Number(res.elapsed_s).toFixed(3)} s`;
  $("result-summary").textContent = summary;
  drawTable();

  state.chart = chart || null;
  redrawChart();
}

function redrawChart() {
  const chartBox = $("chart");
  chartBox.hidden = false;  // measured while shown
  const width = chartBox.clientWidth || 640;
  state.chartWidth = width;
  const drawn = !!state.result && drawChart(chartBox, state.result, state.chart, label, width);
  chartBox.hidden = !drawn;
  chartBox.dataset.kind = drawn ? asText(state.chart.kind) : "none";
}

function compareValues(a, b) {
  const an = a === null || a === undefined;
  const bn = b === null || b === undefined;
  if (an || bn) return an && bn ? 0 : an ? 1 : -1;  // NULLs last either way (handled below)
  const ta = typeof a === "number";
  const tb = typeof b === "number";
  if (ta && tb) return a - b;
  if (ta !== tb) return ta ? -1 : 1;
  const sa = asText(a);
  const sb = asText(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

function sortBy(col) {
  if (!state.result) return;
  const dir = state.sort.col === col ? -state.sort.dir : 1;
  state.sort = { col, dir };
  const rows = state.result.rows.map((r, i) => [r, i]);
  rows.sort(([ra, ia], [rb, ib]) => {
    const a = ra[col];
    const b = rb[col];
    const an = a === null || a === undefined;
    const bn = b === null || b === undefined;
    if (an !== bn) return an ? 1 : -1;   // NULLs always at the end
    return compareValues(a, b) * dir || ia - ib;
  });
  state.view = rows.map(([r]) => r);
  state.page = 0;
  drawTable();
}

// A number as the table shows it: integers in full, other numbers to 15 significant digits (as SQLite's shell
// prints them), so a sum of prices reads 3501.5, not 3501.4999999999995. Sorting and the CSV download keep every
// digit.
function numberText(v) {
  return Number.isInteger(v) || !Number.isFinite(v) ? String(v) : String(Number(v.toPrecision(15)));
}

function cell(v) {
  const td = document.createElement("td");
  const box = document.createElement("div");
  box.className = "v";
  if (v === null || v === undefined) {
    box.appendChild(plain("span", "null", "NULL"));
  } else if (typeof v === "number") {
    td.className = "num";
    box.textContent = numberText(v);
  } else if (typeof v === "boolean") {
    box.textContent = String(v);
  } else {
    appendLong(box, asText(v));
  }
  td.appendChild(box);
  return td;
}

function drawTable() {
  const table = $("result-table");
  const { columns } = state.result;
  table.replaceChildren();
  const thead = document.createElement("thead");
  const hr = document.createElement("tr");
  columns.forEach((name, i) => {
    const th = document.createElement("th");
    th.scope = "col";
    const b = document.createElement("button");
    b.type = "button";
    b.title = "Sort by this column";
    appendLong(b, asText(name), "", 200);
    if (state.sort.col === i) {
      th.setAttribute("aria-sort", state.sort.dir > 0 ? "ascending" : "descending");
      b.appendChild(plain("span", "sort", state.sort.dir > 0 ? "▲" : "▼"));
    }
    b.addEventListener("click", () => sortBy(i));
    th.appendChild(b);
    hr.appendChild(th);
  });
  thead.appendChild(hr);
  const tbody = document.createElement("tbody");
  const pages = Math.max(1, Math.ceil(state.view.length / PAGE_SIZE));
  state.page = Math.min(state.page, pages - 1);
  const start = state.page * PAGE_SIZE;
  for (const row of state.view.slice(start, start + PAGE_SIZE)) {
    const tr = document.createElement("tr");
    for (let i = 0; i < columns.length; i++) tr.appendChild(cell(Array.isArray(row) ? row[i] : null));
    tbody.appendChild(tr);
  }
  if (state.view.length === 0) {
    const tr = document.createElement("tr");
    const td = plain("td", "muted", "No rows.");
    td.colSpan = Math.max(1, columns.length);
    tr.appendChild(td);
    tbody.appendChild(tr);
  }
  table.append(thead, tbody);
  $("pager").hidden = pages <= 1;
  $("page-info").textContent = `Page ${state.page + 1} of ${pages}`;
  $("prev-page").disabled = state.page === 0;
  $("next-page").disabled = state.page >= pages - 1;
}

function safeFileName(name) {
  return (name || "result").replace(/[^A-Za-z0-9_.-]+/g, "_").slice(0, 60) || "result";
}

async function downloadCsv() {
  if (!state.resultSql || !state.db) return;
  const btn = $("csv-button");
  btn.disabled = true;
  try {
    const resp = await request("POST", "/api/sql/csv", { database: state.db, sql: state.resultSql });
    const blob = await resp.blob();
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = `${safeFileName(state.db)}-result.csv`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (err) {
    showError($("sql-error"), err);
  } finally {
    btn.disabled = false;
  }
}

// --------------------------------------------------------------------------------------------
// Feedback
// --------------------------------------------------------------------------------------------

async function sendFeedback(verdict, correctedSql) {
  const a = state.answer;
  if (!a || !a.answer_id) return;
  const status = $("feedback-status");
  const body = {
    answer_id: a.answer_id,
    database: state.db,
    question: asText(a.question),
    sql: asText(a.sql),
    verdict,
  };
  const edited = editedSql();
  if (correctedSql) body.corrected_sql = correctedSql;
  else if (edited) body.corrected_sql = edited;  // "Right" on an edited query: the SQL on screen is the right one
  $("thumbs-up").disabled = true;
  $("thumbs-down").disabled = true;
  status.className = "muted";
  status.textContent = "Sending…";
  try {
    const res = await api("POST", "/api/feedback", body);
    if (res && res.added) {
      status.className = "ok";
      status.textContent = verdict === "right" && !body.corrected_sql
        ? "Thank you: added to examples. Similar questions will use this pair."
        : "Thank you: your SQL was added to examples.";
    } else if (res && res.pending) {
      status.className = "ok";
      status.textContent = "Thank you: sent for review. Once the server's operator accepts it, similar questions will use this pair.";
    } else {
      status.textContent = "Thank you: your feedback was recorded.";
    }
    $("correction").hidden = true;
  } catch (err) {
    status.replaceChildren();
    const box = plain("div", "error");
    showError(box, err);
    status.appendChild(box);
    $("thumbs-up").disabled = false;
    $("thumbs-down").disabled = false;
  }
}

function openCorrection() {
  $("correction").hidden = false;
  $("corrected-sql").value = currentSql() || asText(state.answer && state.answer.sql);
  $("corrected-sql").focus();
}

// --------------------------------------------------------------------------------------------
// Wiring
// --------------------------------------------------------------------------------------------

function wire() {
  $("db-select").addEventListener("change", (e) => selectDatabase(e.target.value));
  $("ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    ask($("question").value);
  });
  $("question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      ask($("question").value);
    }
  });
  $("cancel-button").addEventListener("click", () => {
    if (state.inflight) state.inflight.abort();
  });
  $("new-conversation").addEventListener("click", () => {
    startNewConversation();
    clearAnswer();
    $("progress").hidden = true;
    $("question").focus();
  });
  $("write-sql").addEventListener("click", writeSqlYourself);
  $("refresh-conversations").addEventListener("click", loadConversations);
  $("edit-sql").addEventListener("click", toggleEdit);
  $("run-sql").addEventListener("click", runSql);
  $("explain-sql").addEventListener("click", explainSql);
  $("sql-editor").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      runSql();
    }
  });
  $("csv-button").addEventListener("click", downloadCsv);
  $("prev-page").addEventListener("click", () => {
    state.page = Math.max(0, state.page - 1);
    drawTable();
  });
  $("next-page").addEventListener("click", () => {
    state.page += 1;
    drawTable();
  });
  $("thumbs-up").addEventListener("click", () => sendFeedback("right"));
  $("thumbs-down").addEventListener("click", openCorrection);
  $("cancel-correction").addEventListener("click", () => {
    $("correction").hidden = true;
  });
  $("correction").addEventListener("submit", (e) => {
    e.preventDefault();
    const sql = $("corrected-sql").value.trim();
    sendFeedback("wrong", sql || undefined);
  });
  $("key-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const key = $("key-input").value.trim();
    if (!key) return;
    storage()?.setItem(KEY_STORE, key);
    $("key-input").value = "";
    $("key-form").hidden = true;
    pageError(null);
    await Promise.all([loadHealth(), loadDatabases(), loadPresets()]);
  });
  $("preset").addEventListener("change", () => storage()?.setItem(PRESET_STORE, $("preset").value));
}

wire();
let resizeTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    if (state.result && !$("result").hidden && Math.abs(($("chart").clientWidth || 0) - state.chartWidth) > 40) redrawChart();
  }, 150);
});
loadHealth();
loadDatabases();
loadPresets();
