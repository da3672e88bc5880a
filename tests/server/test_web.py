"""The web page in a real headless Chromium (Debian's ``chromium`` package driven by Playwright).

A real server (uvicorn on a free 127.0.0.1 port, in a background thread) serves the demo shop with a fake
model, and the page is used as a person would: pick, browse, ask, watch the stages, read and re-run the
SQL, sort, page, download, chart, explain, judge, follow up, reopen and delete conversations. The page
runs under the server's Content-Security-Policy; every test checks that nothing was refused and that
nothing went to the console. The hostile-values fixture (``tests/hostile.py``) is then shown through every
part of the page, and one ``model`` test asks the real embedded model.

One browser per module (``scripts/browser.sh`` installs Chromium when it is missing); each test gets a
fresh browser context (its own storage). Screenshots go to pytest's temporary folder (``screenshots/``);
``docs/screenshot.png`` (the README's) is made on purpose by ``scripts/screenshot.py``, never by a test.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.extras import need_extra

need_extra("server")
need_extra("dev")  # playwright drives the real browser

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402

from sqlweave.catalog import Catalog, DatabaseEntry  # noqa: E402
from sqlweave.llm.base import GenerationOptions, Message  # noqa: E402
from sqlweave.llm.fake import FakeLLM  # noqa: E402
from sqlweave.presets import MEASURED, describe_presets  # noqa: E402
from sqlweave.server import ServerSettings, create_app  # noqa: E402
from sqlweave.text import visible  # noqa: E402
from tests import hostile  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "sqlweave" / "web"
BROWSER_SCRIPT = ROOT / "scripts" / "browser.sh"

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

#: The page's own limit for a value shown in a table cell (app.js MAX_CHARS).
CELL_CHARS = 500

MONTHLY_REVENUE_SQL = (
    "SELECT strftime('%Y-%m', o.order_date) AS month, ROUND(SUM(oi.quantity * oi.unit_price), 2) AS revenue "
    "FROM orders AS o JOIN order_items AS oi ON oi.order_id = o.order_id GROUP BY month ORDER BY month")

#: The third-party scripts the page loads, in order (sqlweave/web/vendor/, from their npm packages).
VENDORED = ("chart.umd.min.js", "prism-core.min.js", "prism-sql.min.js")

#: What Chart.js drew in #chart: its type, axis, labels, values and title, and whether the canvas holds any paint.
CHART_STATE = """() => {
  const canvas = document.querySelector('#chart canvas');
  const chart = canvas && Chart.getChart(canvas);
  if (!chart) return null;
  const box = canvas.getBoundingClientRect();
  const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let painted = 0;
  for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) painted++;
  return {type: chart.config.type, horizontal: chart.options.indexAxis === 'y', labels: chart.data.labels,
          values: chart.data.datasets[0].data, elements: chart.getDatasetMeta(0).data.length,
          title: chart.options.plugins.title.text, x: box.x, width: box.width, painted,
          canvases: document.querySelectorAll('#chart canvas').length,
          others: document.querySelectorAll('#chart *:not(canvas, p.note)').length};
}"""

#: The tooltip Chart.js shows over item ``i``: its title and body lines.
CHART_TOOLTIP = """(i) => {
  const chart = Chart.getChart(document.querySelector('#chart canvas'));
  chart.tooltip.setActiveElements([{datasetIndex: 0, index: i}], {x: 0, y: 0});
  chart.update();
  return [chart.tooltip.title.join(' '), chart.tooltip.body.flatMap((b) => b.lines).join(' ')];
}"""


def chart_state(page: Page) -> dict[str, Any]:
    state = page.evaluate(CHART_STATE)
    assert state is not None, "no chart drawn"
    return state


ANSWERS = {
    "How many customers are there?": "SELECT COUNT(*) FROM customers",
    "What is the total revenue per month?": MONTHLY_REVENUE_SQL,
    "Which customers are from Canada?":
        "SELECT first_name, last_name, city FROM customers WHERE country = 'Canada' ORDER BY last_name",
    "How many of them are there?": "SELECT COUNT(*) FROM customers WHERE country = 'Canada'",
    "How many customers are from Canada?": "SELECT COUNT(*) FROM customers WHERE country = 'Canada'",
    "How many orders per status?": "SELECT status, COUNT(*) AS orders FROM orders GROUP BY status",
    "List every customer with all their details.": "SELECT * FROM customers",
    "Delete every order.": "DROP TABLE orders",
}
RESTATED = {"How many of them are there?": "How many customers are from Canada?"}
EXPLANATION = "It counts the rows of the customers table:\none row per customer, so the count answers the question."


def question_of(messages: tuple[Message, ...]) -> str:
    return messages[-1].content.rsplit("Question:", 1)[-1].strip()


def shop_responder(messages: tuple[Message, ...], options: GenerationOptions) -> str:
    if question_of(messages).startswith("Slowly,"):  # a question that keeps the model busy for a while
        time.sleep(3.5)
    if question_of(messages).startswith("Sampling,") and options.temperature > 0:  # each sample takes a while
        time.sleep(1.0)
    if messages[0].content.startswith("You review SQL"):
        return EXPLANATION
    if messages[0].content.startswith("You rewrite the last question"):  # a follow-up, restated on its own
        return RESTATED.get(messages[-1].content.rsplit("Last question:", 1)[-1].split("\n")[0].strip(), "")
    if any("shoe size" in m.content for m in messages):  # also when the correction stage asks again
        return "```sql\nSELECT shoe_size FROM customers\n```"
    sql = ANSWERS.get(question_of(messages), "SELECT COUNT(*) FROM products")
    return f"```sql\n{sql}\n```"


# --- the browser ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium_path() -> str:
    """Chromium's executable, installed by scripts/browser.sh when missing (a clear failure if it cannot be)."""
    try:
        proc = subprocess.run(["bash", str(BROWSER_SCRIPT)], capture_output=True, text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        pytest.fail("scripts/browser.sh did not finish installing Chromium within 20 minutes")
    path = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode != 0 or not path or not os.access(path, os.X_OK):
        pytest.fail("the web page tests need Chromium, and scripts/browser.sh could not provide it:\n"
                    f"{proc.stderr.strip()[-2000:]}\n(install it with: apt-get install -y chromium)")
    return path


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Browser]:
    # Playwright gives every launch a fresh, temporary user-data directory.
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


# --- a real server in a thread -------------------------------------------------------------------------


class LiveServer:
    """uvicorn serving ``app`` on a free 127.0.0.1 port from a background thread."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", log_config=None)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       name=f"sqlweave-test-server-{self.port}", daemon=True)

    def start(self) -> "LiveServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()

    def api(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return httpx.request(method, self.url + path, timeout=60, **kw)


@contextmanager
def live_server(settings: ServerSettings) -> Iterator[LiveServer]:
    server = LiveServer(create_app(settings)).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def module_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache folder for the module's servers (demo database, conversations); model weights stay put."""
    from sqlweave.llm.weights import model_dir

    folder = tmp_path_factory.mktemp("web-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("SQLWEAVE_MODEL_DIR", str(model_dir()))
    mp.setenv("SQLWEAVE_CACHE_DIR", str(folder))
    try:
        yield folder
    finally:
        mp.undo()


def server_settings(catalog: Catalog, llm: Any, folder: Path, **overrides: Any) -> ServerSettings:
    options: dict[str, Any] = dict(api_key=None, rate_limit_per_minute=0,
                                   conversation_url=f"sqlite:///{folder / 'conversations.sqlite'}",
                                   feedback_log=folder / "feedback.jsonl")
    options.update(overrides)
    return ServerSettings(catalog, llm=llm, **options)


@pytest.fixture(scope="module")
def shop(module_env: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The demo shop (``Catalog.demo()``) with a fake model that knows the questions in ANSWERS."""
    folder = tmp_path_factory.mktemp("web-shop")
    llm = FakeLLM(responder=shop_responder)
    with live_server(server_settings(Catalog.demo(), llm, folder)) as server:
        server.llm = llm  # type: ignore[attr-defined]
        yield server


# --- a watched page ------------------------------------------------------------------------------------

#: Runs before the page's own scripts: records every Content-Security-Policy violation.
WATCH_SCRIPT = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || ''));
});
"""

#: A console error Chromium prints for every HTTP error response (expected when a test provokes one).
_HTTP_ERROR = re.compile(r"^Failed to load resource: the server responded with a status of (\d{3})")


class Watched:
    """A page plus what it did: console errors, uncaught errors, dialogs, requests, CSP violations."""

    def __init__(self, page: Page, base: str) -> None:
        self.page = page
        self.base = base
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[tuple[str, str, str | None]] = []
        page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("dialog", self._dialog)
        page.on("request", lambda r: self.requests.append((r.method, r.url, r.post_data)))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self) -> "Watched":
        resp = self.page.goto(self.base + "/")
        assert resp is not None and resp.status == 200
        self.response = resp
        expect(self.page.locator("#db-select option").first).to_be_attached()
        expect(self.page.locator("#schema details").first).to_be_attached()
        return self

    # --- doing things ---

    def counter(self, name: str) -> int:
        return int(self.page.evaluate(f"Number(document.body.dataset.{name} || 0)"))

    def ask(self, question: str, timeout_s: float = 30) -> None:
        """Type ``question``, press Ask, and wait until the page has finished with it."""
        before = self.counter("asked")
        self.page.fill("#question", question)
        self.page.click("#ask-button")
        self.wait_counter("asked", before + 1, timeout_s)

    def wait_counter(self, name: str, value: int, timeout_s: float = 30) -> None:
        # (wait_for_function evaluates a string, which the page's CSP rightly forbids: use the locator)
        expect(self.page.locator("body")).to_have_attribute(f"data-{name}", str(value), timeout=timeout_s * 1000)

    def run_sql(self, sql: str) -> None:
        """Write ``sql`` into the editor (opening it as needed) and run it; wait for the outcome."""
        page = self.page
        if page.locator("#answer").is_hidden():
            page.click("#write-sql")
        elif page.locator("#sql-editor").is_hidden():
            page.click("#edit-sql")
        page.fill("#sql-editor", sql)
        before = self.counter("ran")
        page.click("#run-sql")
        self.wait_counter("ran", before + 1)

    def cells(self, column: int | None = None) -> list[str]:
        """The visible text of the shown page of the result table (without the 'show all' buttons)."""
        return self.page.evaluate(
            """(col) => [...document.querySelectorAll('#result-table tbody tr')].map((tr) => {
                 const tds = [...tr.children];
                 const pick = col === null ? tds : [tds[col]];
                 return pick.map((td) => { const c = td.cloneNode(true);
                   c.querySelectorAll('button').forEach((b) => b.remove()); return c.textContent; }).join('\\t');
               })""", column)

    def headers(self) -> list[str]:
        return self.page.evaluate(
            """() => [...document.querySelectorAll('#result-table thead th button')].map((b) => {
                 const c = b.cloneNode(true); c.querySelectorAll('.sort, button').forEach((x) => x.remove());
                 return c.textContent; })""")

    def posted(self, path: str) -> list[dict[str, Any]]:
        return [json.loads(body or "{}") for method, url, body in self.requests
                if method == "POST" and url == self.base + path]

    # --- checks ---

    def csp_violations(self) -> list[str]:
        return self.page.evaluate("window.__cspViolations")

    def assert_clean(self, allow_http: tuple[int, ...] = ()) -> None:
        """No uncaught error, no console error (but HTTP statuses in ``allow_http``), no CSP violation,
        no dialog, and no request that left the server's origin."""
        unexpected = []
        for text in self.console_errors:
            m = _HTTP_ERROR.match(text)
            if m and int(m.group(1)) in allow_http:
                continue
            unexpected.append(text)
        assert unexpected == [], unexpected
        assert self.page_errors == [], self.page_errors
        assert self.csp_violations() == []
        assert self.dialogs == []
        outside = [url for _, url, _ in self.requests
                   if not (url.startswith(self.base + "/") or url.startswith(("data:", "blob:")))]
        assert outside == [], outside


@pytest.fixture
def open_page(browser: Browser) -> Iterator[Callable[..., Watched]]:
    contexts = []

    def _open(server: LiveServer, width: int = 1280, height: int = 900, go: bool = True) -> Watched:
        ctx = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True,
                                  device_scale_factor=1)
        ctx.add_init_script(WATCH_SCRIPT)
        ctx.set_default_timeout(20_000)
        contexts.append(ctx)
        watched = Watched(ctx.new_page(), server.url)
        return watched.open() if go else watched

    yield _open
    for ctx in contexts:
        ctx.close()


def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.getbasetemp() / "screenshots"
    folder.mkdir(exist_ok=True)
    return folder


# --- the page itself -------------------------------------------------------------------------------------


def test_page_files_have_no_inline_code_and_no_markup_from_strings() -> None:
    html = (WEB / "index.html").read_text(encoding="utf-8")
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert "src=" in tag, tag
    assert re.search(r"<script\b[^>]*>\s*[^<\s]", html) is None  # no inline script body
    assert "<style" not in html and re.search(r"\sstyle\s*=", html) is None
    assert re.search(r"\son[a-z]+\s*=", html) is None  # no inline event handlers
    assert re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", html) is None  # nothing from another origin
    for name in ("app.js", "chart.js"):
        js = (WEB / name).read_text(encoding="utf-8")
        js = re.sub(r"/\*.*?\*/", "", js, flags=re.S)  # comments may name what the code never does
        js = "\n".join(line for line in js.splitlines() if not line.strip().startswith("//"))
        for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                       "setAttribute(\"style\"", "setAttribute('style'", "cssText", "http://", "https://"):
            assert banned not in js, f"{name} uses {banned}"
    scripts = re.findall(r"<script\b[^>]*\bsrc=\"([^\"]+)\"", html)
    assert scripts == [f"/static/vendor/{name}" for name in VENDORED] + ["/static/app.js"]
    css = (WEB / "app.css").read_text(encoding="utf-8")
    assert "@import" not in css and "url(" not in css and "@font-face" not in css


def test_the_vendored_scripts_are_their_npm_packages_files_unchanged() -> None:
    # sqlweave/web/vendor/ holds Chart.js and Prism as scripts/vendor-js.sh copied them from their npm packages:
    # each file must be the one whose checksum it recorded, with its package's licence beside it.
    import hashlib

    record = json.loads((WEB / "vendor" / "vendor.json").read_text(encoding="utf-8"))
    assert sorted(record) == ["chart.js", "prismjs"]
    names = []
    for package, entry in record.items():
        for path, digest in entry["files"].items():
            file = WEB / "vendor" / Path(path).name
            assert hashlib.sha256(file.read_bytes()).hexdigest() == digest, path
            names.append(file.name)
        licence = (WEB / "vendor" / f"{package}-{Path(entry['license']).name}").read_text(encoding="utf-8")
        assert "mit license" in licence.lower()
    assert names == list(VENDORED)
    assert "Chart.js v4" in (WEB / "vendor" / "chart.umd.min.js").read_text(encoding="utf-8")[:200]


def test_page_loads_offline_under_the_csp(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    csp = w.response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "style-src 'self'" in csp and "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert w.response.headers["x-content-type-options"] == "nosniff"
    assert page.locator("#db-select").input_value() == "shop"
    expect(page.locator("#schema details")).to_have_count(6)
    expect(page.locator("#health")).to_contain_text("model fake")
    chips = page.locator("#suggestions .chip")
    expect(chips.first).to_be_visible()
    assert "How many orders are there?" in chips.all_text_contents()
    # the schema: collapsible tables with columns, types, keys
    customers = page.locator("#schema details", has_text="customers").first
    customers.locator("summary").click()
    expect(customers.locator("li", has_text="customer_id")).to_contain_text("PK")
    orders = page.locator("#schema details").filter(has=page.locator("summary", has_text=re.compile(r"^orders")))
    orders.locator("summary").click()
    expect(orders.locator("li", has_text="customer_id")).to_contain_text("→ customers.customer_id")
    assert page.title() == "sqlweave"
    w.assert_clean()


def test_sql_tokens_keep_every_character_and_read_standard_quoting(shop: LiveServer, open_page) -> None:
    import random

    w = open_page(shop)
    named = ["SELECT \"order\", [x y], `z` FROM t WHERE a = 'it''s' -- note", "SELECT 'open", '"half', "/* x */ 1.5e3"]
    rng = random.Random(7)
    alphabet = "SELECTFROMWHERE selectfrom'\"`[]()*,;.-/#@$\\\n\t\x1b\u202e0123456789éß中"
    fuzz = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60))) for _ in range(300)]
    pieces = w.page.evaluate("""async (sqls) => {
        const m = await import('/static/app.js');
        return sqls.map((s) => m.tokenize(s));
    }""", named + fuzz)
    for sql, tokens in zip(named + fuzz, pieces):
        assert "".join(text for _, text in tokens) == sql  # nothing lost, added or reordered
    kinds = {text: kind for kind, text in pieces[0]}
    assert kinds['"order"'] == kinds["[x y]"] == kinds["`z`"] == "identifier"
    assert kinds["'it''s'"] == "string" and kinds["-- note"] == "comment" and kinds["SELECT"] == "keyword"
    assert pieces[1][-1] == ["string", "'open"] and pieces[2] == [["identifier", '"half']]
    w.assert_clean()


def test_how_many_customers_shows_60_with_live_stages(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    w.ask("How many customers are there?")
    assert w.cells() == ["60"]
    expect(page.locator("#result-summary")).to_contain_text("1 row")
    # one number: a big figure
    expect(page.locator("#chart .big-number .figure")).to_have_text("60")
    # the stages arrived over the stream, in pipeline order, with their seconds
    assert len(w.posted("/api/ask/stream")) == 1 and w.posted("/api/ask") == []
    stages = page.locator("#stages .stage-name").all_text_contents()
    assert stages[:3] == ["Reading the question", "Reading the schema", "Writing SQL"]  # in words
    assert "Running the query" in stages
    titles = page.locator("#stages .stage-name").evaluate_all("ns => ns.map(n => n.title)")
    assert titles[:3] == ["check_question", "render_schema", "generate"]  # the trace's names, one hover away
    assert all(re.match(r"^\d+\.\d\d s", t) for t in page.locator("#stages .stage-secs").all_text_contents())
    expect(page.locator("#progress-summary")).to_contain_text(f"{len(stages)} stages")
    # the SQL, highlighted by Prism's tokens
    expect(page.locator("#sql-code")).to_have_text("SELECT COUNT(*) FROM customers")
    assert page.locator("#sql-code .tok-keyword").all_text_contents() == ["SELECT", "FROM"]
    assert page.locator("#sql-code .tok-function").all_text_contents() == ["COUNT"]
    assert page.locator("#sql-code .tok-punctuation").all_text_contents() == ["(", ")"]
    expect(page.locator("#answer-meta")).to_contain_text("1 model call")
    w.assert_clean()


def test_monthly_revenue_draws_a_line_chart(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    w.ask("What is the total revenue per month?")
    expect(page.locator("#chart")).to_have_attribute("data-kind", "line")
    months = shop.api("POST", "/api/sql", json={"database": "shop", "sql": MONTHLY_REVENUE_SQL}).json()["rows"]
    chart = chart_state(page)
    assert chart["type"] == "line" and not chart["horizontal"] and chart["canvases"] == 1
    assert chart["labels"] == [m for m, _ in months] and chart["values"] == [r for _, r in months]
    assert chart["elements"] == len(months) and chart["title"] == "revenue by month"
    assert chart["painted"] > 1000 and chart["others"] == 0
    first_month, first_revenue = months[0]
    title, body = page.evaluate(CHART_TOOLTIP, 0)
    assert title == first_month and body == f"{first_revenue:,.2f}".rstrip("0").rstrip(".")
    # the table shows the first page of the months
    assert w.cells(0)[:2] == [months[0][0], months[1][0]]
    w.assert_clean()


def test_follow_up_continues_the_conversation(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    w.ask("Which customers are from Canada?")
    expect(page.locator("#follow-up-note")).to_be_visible()
    w.ask("How many of them are there?")
    canadians = shop.api("POST", "/api/sql", json={
        "database": "shop", "sql": "SELECT COUNT(*) FROM customers WHERE country = 'Canada'"}).json()["rows"][0][0]
    assert w.cells() == [str(canadians)]
    first, second = w.posted("/api/ask/stream")
    assert "conversation_id" not in first and first["new_conversation"] is True
    conversation_id = second["conversation_id"]
    assert conversation_id and not second.get("new_conversation")
    # the answer says which turn it builds on and how the follow-up was read, and the conversation shows both
    # turns, newest last
    expect(page.locator("#answer-meta")).to_contain_text("builds on question 1")
    expect(page.locator("#answer-meta .restated")).to_have_text("read as: “How many customers are from Canada?”")
    turns = page.locator("#turns > li")
    expect(turns).to_have_count(2)
    assert turns.nth(0).locator(".turn-q").text_content() == "Which customers are from Canada?"
    assert turns.nth(1).locator(".turn-q").text_content() == "How many of them are there?"
    expect(turns.nth(1)).to_contain_text("builds on question 1")
    stored = shop.api("GET", f"/api/conversations/{conversation_id}").json()
    assert [t["number"] for t in stored["turns"]] == [1, 2] and stored["turns"][1]["builds_on"] == 1
    # the second prompt carried the first turn
    prompts = [c[0][-1].content for c in shop.llm.calls if "How many of them are there?" in c[0][-1].content]
    assert prompts and "Which customers are from Canada?" in prompts[-1]
    expect(page.locator("#conversations li", has_text="Which customers are from Canada?")).to_contain_text(
        "2 questions")
    # a new conversation starts without the old turns
    page.click("#new-conversation")
    expect(page.locator("#conversation-panel")).to_be_hidden()
    w.ask("How many customers are there?")
    assert "conversation_id" not in w.posted("/api/ask/stream")[-1]
    expect(page.locator("#turns > li")).to_have_count(1)
    w.assert_clean()


def test_a_failed_answer_shows_its_error_and_sql(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    w.ask("What is the customers' shoe size?")
    err = page.locator("#answer-error")
    expect(err).to_be_visible()
    code = err.locator(".err-code").text_content()
    assert code and code != "network_error"
    assert err.locator(".err-message").text_content()
    expect(page.locator("#sql-code")).to_contain_text("shoe_size")
    expect(page.locator("#result")).to_be_hidden()
    expect(page.locator("#progress-summary")).to_contain_text("no answer")
    expect(page.locator("#progress-details")).to_have_attribute("open", "")
    expect(page.locator("#thumbs-down")).to_be_visible()  # a wrong answer can be corrected
    w.assert_clean()


def test_thumbs_up_sends_the_pair_for_review(shop: LiveServer, open_page) -> None:
    from sqlweave.feedback import PendingExamples

    w = open_page(shop)
    page = w.page
    w.ask("How many customers are there?")
    page.click("#thumbs-up")
    expect(page.locator("#feedback-status")).to_contain_text("sent for review")
    body = w.posted("/api/feedback")[-1]
    assert body["verdict"] == "right" and body["sql"] == "SELECT COUNT(*) FROM customers" and body["answer_id"]
    assert "corrected_sql" not in body
    pairs = {(p.question, p.sql) for p in PendingExamples.of().waiting()}
    assert ("How many customers are there?", "SELECT COUNT(*) FROM customers") in pairs
    w.assert_clean()


def test_thumbs_down_sends_the_corrected_sql(shop: LiveServer, open_page) -> None:
    from sqlweave.feedback import PendingExamples

    w = open_page(shop)
    page = w.page
    w.ask("How many orders per status?")
    page.click("#thumbs-down")
    expect(page.locator("#corrected-sql")).to_have_value(ANSWERS["How many orders per status?"])
    corrected = "SELECT status, COUNT(*) AS orders FROM orders GROUP BY status ORDER BY orders DESC"
    page.fill("#corrected-sql", corrected)
    page.click("#correction button[type=submit]")
    expect(page.locator("#feedback-status")).to_contain_text("sent for review")
    body = w.posted("/api/feedback")[-1]
    assert body["verdict"] == "wrong" and body["corrected_sql"] == corrected
    assert ("How many orders per status?", corrected) in {(p.question, p.sql) for p in PendingExamples.of().waiting()}
    w.assert_clean()


def test_a_refused_statement_offers_no_right_or_wrong(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    w.ask("Delete every order.")
    expect(page.locator("#answer-error .err-code")).to_have_text("refused_statement")
    expect(page.locator("#thumbs-up")).to_be_hidden()
    expect(page.locator("#thumbs-down")).to_be_hidden()
    w.assert_clean()


def test_edit_run_right_sends_the_sql_on_screen_and_says_it_is_yours(shop: LiveServer, open_page) -> None:
    from sqlweave.feedback import PendingExamples

    w = open_page(shop)
    page = w.page
    w.ask("How many customers are there?")
    expect(page.locator("#answer-meta .confidence strong")).to_be_visible()  # the model's confidence, first
    page.click("#edit-sql")
    edited = "SELECT COUNT(customer_id) AS customers FROM customers"
    w.run_sql(edited)
    assert w.cells() == ["60"]
    expect(page.locator("#answer-meta .own-query")).to_have_text("your query")
    expect(page.locator("#answer-meta .confidence strong")).to_have_count(0)
    page.click("#thumbs-up")
    expect(page.locator("#feedback-status")).to_contain_text("sent for review")
    body = w.posted("/api/feedback")[-1]
    assert body["verdict"] == "right" and body["sql"] == "SELECT COUNT(*) FROM customers"
    assert body["corrected_sql"] == edited
    assert ("How many customers are there?", edited) in {(p.question, p.sql) for p in PendingExamples.of().waiting()}
    w.assert_clean()


def test_sql_editor_reruns_edited_sql_and_refuses_a_drop(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    w.ask("How many customers are there?")
    page.click("#edit-sql")
    expect(page.locator("#sql-editor")).to_have_value("SELECT COUNT(*) FROM customers")
    w.run_sql("SELECT COUNT(*) AS products FROM products")
    assert w.cells() == ["40"]
    assert w.headers() == ["products"]
    page.click("#edit-sql")  # done editing: the highlighted view shows the edited SQL
    expect(page.locator("#sql-code")).to_have_text("SELECT COUNT(*) AS products FROM products")
    # the same guard as the API: a DROP is refused with its code, message and hint
    w.run_sql("DROP TABLE customers")
    err = page.locator("#sql-error")
    expect(err).to_be_visible()
    expect(err.locator(".err-code")).to_have_text("refused_statement")
    assert err.locator(".err-message").text_content()
    assert err.locator(".err-hint").text_content()
    assert w.posted("/api/sql")[-1] == {"database": "shop", "sql": "DROP TABLE customers"}
    still = shop.api("POST", "/api/sql", json={"database": "shop", "sql": "SELECT COUNT(*) FROM customers"})
    assert still.json()["rows"] == [[60]]
    # the last good result stays on screen
    assert w.cells() == ["40"]
    w.assert_clean(allow_http=(400, 403, 422))


def test_table_sorts_pages_and_downloads_csv(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    w.run_sql("SELECT customer_id, first_name, country FROM customers")
    expect(page.locator("#result-summary")).to_contain_text("60 rows")
    expect(page.locator("#page-info")).to_have_text("Page 1 of 3")
    ids = w.cells(0)
    assert ids == [str(i) for i in range(1, 26)]
    page.click("#next-page")
    assert w.cells(0)[0] == "26"
    # sort by a click on the column name: ascending, then descending
    header = page.locator("#result-table thead th button", has_text="customer_id")
    header.click()
    expect(page.locator("#result-table thead th").first).to_have_attribute("aria-sort", "ascending")
    header.click()
    expect(page.locator("#result-table thead th").first).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#page-info")).to_have_text("Page 1 of 3")
    assert w.cells(0)[:3] == ["60", "59", "58"]
    page.locator("#result-table thead th button", has_text="first_name").click()
    names = w.cells(1)
    assert names == sorted(names)
    # CSV through POST /api/sql/csv, downloaded from an object URL
    with page.expect_download() as info:
        page.click("#csv-button")
    download = info.value
    assert download.suggested_filename == "shop-result.csv"
    text = Path(download.path()).read_text(encoding="utf-8")
    lines = text.strip().splitlines()
    assert lines[0] == "customer_id,first_name,country" and len(lines) == 61
    w.assert_clean()


def test_numbers_show_fifteen_significant_digits_and_the_csv_keeps_them_all(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    w.run_sql("SELECT 0.1 + 0.2 AS total, 3501.4999999999995 AS revenue, 7 AS n, 1e-7 AS tiny, "
              "'0.30000000000000004' AS t")
    assert w.cells() == ["0.3\t3501.5\t7\t1e-7\t0.30000000000000004"]  # text stays as written
    with w.page.expect_download() as info:
        w.page.click("#csv-button")
    lines = Path(info.value.path()).read_text(encoding="utf-8").splitlines()
    assert lines[1] == "0.30000000000000004,3501.4999999999995,7,1e-07,0.30000000000000004"
    w.assert_clean()


def test_explain_shows_the_models_reading_as_text(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    w.ask("How many customers are there?")
    page.click("#explain-sql")
    expect(page.locator("#explanation")).to_be_visible()
    assert page.locator("#explanation-text").text_content() == EXPLANATION
    body = w.posted("/api/explain")[-1]
    assert body == {"database": "shop", "sql": "SELECT COUNT(*) FROM customers",
                    "question": "How many customers are there?"}
    w.assert_clean()


def test_past_conversations_open_and_delete(shop: LiveServer, open_page) -> None:
    for conv in shop.api("GET", "/api/conversations?database=shop").json()["conversations"]:
        shop.api("DELETE", f"/api/conversations/{conv['id']}")
    w = open_page(shop)
    page = w.page
    expect(page.locator("#conversations")).to_contain_text("None yet.")
    w.ask("How many orders per status?")
    page.click("#new-conversation")
    w.ask("How many customers are there?")
    items = page.locator("#conversations li")
    expect(items).to_have_count(2)
    # open the older one: its turns come back, and a follow-up would continue it
    page.locator("#conversations li", has_text="How many orders per status?").locator(".conv-open").click()
    expect(page.locator("#turns > li")).to_have_count(1)
    expect(page.locator("#turns .turn-q")).to_have_text("How many orders per status?")
    expect(page.locator("#conversations li.current")).to_contain_text("How many orders per status?")
    page.locator("#turns .turn-meta button").click()  # show its result again
    w.wait_counter("ran", 1)
    expect(page.locator("#chart")).to_have_attribute("data-kind", "bar")
    chart = chart_state(page)
    assert chart["type"] == "bar" and chart["horizontal"] and chart["elements"] == len(w.cells()) and chart["painted"]
    # delete it
    page.locator("#conversations li", has_text="How many orders per status?").locator("button.danger").click()
    expect(items).to_have_count(1)
    expect(page.locator("#conversation-panel")).to_be_hidden()
    left = shop.api("GET", "/api/conversations?database=shop").json()["conversations"]
    assert [c["title"] for c in left] == ["How many customers are there?"]
    w.assert_clean()


def test_falls_back_to_plain_ask_when_streaming_is_unavailable(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    page.route("**/api/ask/stream", lambda route: route.fulfill(status=404, body="{}",
                                                                content_type="application/json"))
    w.ask("How many customers are there?")
    assert w.cells() == ["60"]
    assert len(w.posted("/api/ask")) == 1
    # the trace of the plain answer fills the stage list
    assert "generate" in page.locator("#stages .stage-name").all_text_contents()
    w.assert_clean(allow_http=(404,))


def test_confidence_is_shown_with_every_answer(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    seen: list[float] = []

    def remember(route: Any) -> None:
        resp = route.fetch()
        body = resp.text()
        seen.extend(json.loads(line[5:])["confidence"] for line in body.splitlines()
                    if line.startswith("data:") and '"answer_id"' in line)
        route.fulfill(response=resp, body=body)

    page.route("**/api/ask/stream", remember)
    w.ask("How many customers are there?")
    assert w.cells() == ["60"]
    [confidence] = seen
    assert 0 < confidence < 1
    expect(page.locator("#answer-meta .confidence")).to_have_text(f"confidence {round(confidence * 100)}%")
    expect(page.locator("#readings")).to_be_hidden()
    expect(page.locator("#cautions")).to_be_hidden()
    w.assert_clean()


def test_method_choice_shows_what_each_costs_and_is_sent(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    sent: list[dict[str, Any]] = []

    def record(route: Any) -> None:  # what the page asks for; the server answers with its default, as fast
        body = json.loads(route.request.post_data or "{}")
        sent.append(dict(body))
        body.pop("preset", None)
        route.continue_(post_data=json.dumps(body))

    page.route("**/api/ask/stream", record)
    options = page.locator("#preset option")
    expect(page.locator("#preset")).to_be_visible()
    names = options.evaluate_all("os => os.map(o => o.value)")
    assert names[0] == "default" and set(names) == set(MEASURED) | {"default"}
    # the seconds measured on this server once it has answered with a preset, else the reference machine's
    asked_here = {p["name"] for p in shop.api("GET", "/api/presets").json()["presets"] if p["server_answers"]}
    for name in names:
        m = MEASURED[name]
        option = page.locator(f"#preset option[value='{name}']")
        if name in asked_here:
            expect(option).to_have_text(re.compile(rf"^{re.escape(name)}: {m.ex:.1f}% on Spider, \d+\.\d s here$"))
        else:
            expect(option).to_have_text(f"{name}: {m.ex:.1f}% on Spider, {m.median_s:.0f} s on 2 cores")
            expect(option).to_have_attribute("title", f"{m.ex:.1f}% of the Spider dev questions answered right, a "
                                             f"median of {m.median_s:.1f} s a question on a 2-core reference "
                                             "machine (not yet timed on this server); made of "
                                             + next(p["made_of"] for p in describe_presets() if p["name"] == name))
    w.ask("How many customers are there?")
    assert "preset" not in sent[-1]  # the server's default: no need to name it
    page.select_option("#preset", "best")
    w.ask("How many customers are there?")
    assert sent[-1]["preset"] == "best" and w.cells() == ["60"]
    page.reload()  # the choice is kept for the session
    expect(page.locator("#preset")).to_have_value("best")
    w.assert_clean()


def unsure_answers(page: Any, second: dict[str, Any], sent: list[dict[str, Any]]) -> None:
    """Route the ask stream so the answer comes back unsure, its own reading first and ``second`` next."""

    def unsure(route: Any) -> None:
        sent.append(json.loads(route.request.post_data or "{}"))
        resp = route.fetch()
        lines = []
        for line in resp.text().splitlines():
            if line.startswith("data:") and '"answer_id"' in line:
                a = json.loads(line[5:])
                a["unsure"] = True
                a["readings"] = [
                    {"sql": a["sql"], "columns": a["columns"], "rows": a["rows"], "truncated": False, "share": 0.6},
                    second,
                ]
                line = "data: " + json.dumps(a)
            lines.append(line)
        route.fulfill(response=resp, body="\n".join(lines) + "\n")

    page.route("**/api/ask/stream", unsure)


def test_an_unsure_answer_shows_its_readings_as_text(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    sent: list[dict[str, Any]] = []
    hostile = "<img src=x onerror=alert(1)>"
    unsure_answers(page, {"sql": f"SELECT '{hostile}' AS x", "columns": [hostile], "rows": [[hostile]],
                          "truncated": False, "share": 0.4}, sent)
    page.select_option("#min-confidence", "0.7")
    w.ask("How many customers are there?")
    assert sent and sent[0]["min_confidence"] == 0.7
    expect(page.locator("#readings")).to_be_visible()
    expect(page.locator("#readings-note")).to_contain_text("Not sure")
    readings = page.locator("#readings .reading")
    expect(readings).to_have_count(2)
    expect(readings.nth(1)).to_contain_text(hostile)  # shown as text
    assert page.locator("#readings img").count() == 0
    readings.nth(1).locator("button.use-reading").click()
    assert w.cells() == [hostile]
    w.assert_clean()


def test_cautions_show_as_text_and_go_with_the_answer(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    hostile = "<img src=x onerror=alert(1)>"

    def cautioned(route: Any) -> None:
        resp = route.fetch()
        lines = []
        for line in resp.text().splitlines():
            if line.startswith("data:") and '"answer_id"' in line:
                a = json.loads(line[5:])
                a["cautions"] = [f"SUM({hostile}.price) counts each products row once per order_items row (fan-out)"]
                line = "data: " + json.dumps(a)
            lines.append(line)
        route.fulfill(response=resp, body="\n".join(lines) + "\n")

    page.route("**/api/ask/stream", cautioned)
    w.ask("How many customers are there?")
    expect(page.locator("#cautions")).to_be_visible()
    expect(page.locator("#cautions .caution")).to_have_count(1)
    expect(page.locator("#cautions .caution")).to_contain_text(f"Caution: SUM({hostile}.price)")  # shown as text
    assert page.locator("#cautions img").count() == 0
    page.unroute("**/api/ask/stream")
    w.ask("How many products are there?")
    expect(page.locator("#cautions")).to_be_hidden()
    w.assert_clean()


def test_wide_readings_stay_inside_a_phone_screen(shop: LiveServer, open_page,
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    w = open_page(shop, width=390, height=844)
    page = w.page
    columns = [f"column_with_a_long_name_{i}" for i in range(8)]
    sql = "SELECT " + ", ".join(columns) + " FROM customers_with_a_very_long_table_name_indeed"
    unsure_answers(page, {"sql": sql, "columns": columns, "rows": [[f"value {i}" for i in range(8)]] * 3,
                          "truncated": False, "share": 0.4}, [])
    w.ask("How many customers are there?")
    expect(page.locator("#readings .reading")).to_have_count(2)
    # the wide reading scrolls inside its own box, not the page
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(screenshot_dir(tmp_path_factory) / "phone-readings.png"), full_page=True)
    w.assert_clean()


def test_an_api_key_is_asked_for_and_sent(module_env: Path, tmp_path: Path, open_page) -> None:
    key = "web-test-key-0123456789"
    settings = server_settings(Catalog.demo(), FakeLLM(responder=shop_responder), tmp_path, api_key=key)
    with live_server(settings) as server:
        w = open_page(server, go=False)
        page = w.page
        page.goto(server.url + "/")
        expect(page.locator("#key-form")).to_be_visible()
        expect(page.locator("#page-error")).to_contain_text("needs an API key")
        page.fill("#key-input", key)
        page.click("#key-form button[type=submit]")
        expect(page.locator("#schema details")).to_have_count(6)
        expect(page.locator("#key-form")).to_be_hidden()
        w.ask("How many customers are there?")
        assert w.cells() == ["60"]
        assert page.evaluate("sessionStorage.getItem('sqlweave.apiKey')") == key
        w.assert_clean(allow_http=(401,))


def test_phone_width_has_no_page_overflow(shop: LiveServer, open_page,
                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    w = open_page(shop, width=390, height=844)
    page = w.page
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    for name in ("default", "best"):  # each method's name and figures fit its box, not cut at the edge
        page.select_option("#preset", name)
        room = page.evaluate("""() => {
          const s = document.querySelector('#preset'), style = getComputedStyle(s);
          const ctx = document.createElement('canvas').getContext('2d');
          ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
          const inner = s.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
          return inner - 16 - ctx.measureText(s.options[s.selectedIndex].text).width;  // 16 px: the arrow
        }""")
        assert room >= 0, (name, room)
    page.select_option("#preset", "default")
    w.ask("List every customer with all their details.")
    assert len(w.cells()) == 25
    wrap = page.locator(".table-wrap")
    # the wide table scrolls inside its own box, not the page
    assert wrap.evaluate("(e) => e.scrollWidth > e.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    w.ask("What is the total revenue per month?")
    expect(page.locator("#chart")).to_have_attribute("data-kind", "line")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    chart = chart_state(page)
    assert chart["x"] >= 0 and chart["x"] + chart["width"] <= 390 and chart["painted"]
    page.screenshot(path=str(screenshot_dir(tmp_path_factory) / "phone.png"), full_page=True)
    w.assert_clean()


def test_the_schema_says_where_its_keys_and_tables_come_from(module_env: Path, tmp_path: Path, open_page) -> None:
    need_extra("duckdb")
    import duckdb

    path = tmp_path / "wh.duckdb"  # two schemas, one named like markup; no declared key
    con = duckdb.connect(str(path))
    con.execute('CREATE SCHEMA "<b>ops</b>"; CREATE TABLE stores AS SELECT i AS store_id, \'s\' || i AS name '
                'FROM range(1, 4) t(i); CREATE TABLE "<b>ops</b>".visits AS SELECT i AS id, 1 + i % 3 AS store_id '
                'FROM range(10) t(i); CREATE TABLE "<b>ops</b>".stores (x INTEGER)')
    con.close()
    catalog = Catalog({"wh": DatabaseEntry("wh", str(path))})
    with live_server(server_settings(catalog, FakeLLM(), tmp_path)) as server:
        w = open_page(server)
        notes = w.page.locator("#schema .schema-note")
        expect(notes).to_have_count(3)
        assert notes.all_text_contents() == ["Keys read from the data: the database declares none.",
                                             "Schemas, in the order a name is looked up: main, <b>ops</b>",
                                             "Not read, an earlier schema has a table of the same name: "
                                             '"<b>ops</b>".stores']
        assert w.page.locator("#schema b").count() == 0  # the name is text, not markup
        visits = w.page.locator("#schema details", has_text="visits").first
        visits.locator("summary").click()
        expect(visits.locator("li", has_text="store_id")).to_contain_text("→ stores.store_id")
        # lists and structs read as the CLI and CSV write them (sqlweave.cells.text_cell)
        w.run_sql("SELECT ['a', 'b c'] AS tags, {'k': [1, NULL]} AS doc, 'NaN'::DOUBLE AS ratio")
        assert w.cells() == ['["a", "b c"]\t{"k": [1, null]}\tNaN']
        w.assert_clean()


def test_a_large_schema_has_a_box_to_find_a_table_or_column_in(module_env: Path, tmp_path: Path, open_page,
                                                               shop: LiveServer) -> None:
    expect(open_page(shop).page.locator("#schema details")).to_have_count(6)
    assert open_page(shop).page.locator("#schema-filter").count() == 0  # six tables: nothing to search
    path = tmp_path / "wide.sqlite"  # twelve tables, one column of which says where a customer lives
    with sqlite3.connect(path) as con:
        for i in range(11):
            con.execute(f"CREATE TABLE ledger_{i} (id INTEGER PRIMARY KEY, amount REAL)")
        con.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, zip_code TEXT)")
    catalog = Catalog({"wide": DatabaseEntry("wide", str(path))})
    with live_server(server_settings(catalog, FakeLLM(), tmp_path)) as server:
        w = open_page(server)
        page = w.page
        tables = page.locator("#schema details")
        expect(tables).to_have_count(12)
        find = page.locator("#schema-filter")
        find.fill("ZIP")  # a column's name, in any case: its table shows, open, the column marked
        expect(page.locator("#schema details:visible")).to_have_count(1)
        found = page.locator("#schema details", has_text="customer")
        assert found.evaluate("d => d.open") is True
        expect(found.locator("li.schema-hit")).to_have_text("zip_codeTEXT")
        expect(page.locator("#schema-count")).to_have_text("1 of 12 tables")
        find.fill("ledger_1")  # a table's name: ledger_1 and ledger_10, closed
        expect(page.locator("#schema details:visible")).to_have_count(2)
        assert found.evaluate("d => d.open") is False  # opened by the search, closed by it
        find.fill("<b>nothing</b>")
        expect(page.locator("#schema details:visible")).to_have_count(0)
        expect(page.locator("#schema-count")).to_have_text("No table or column matches.")
        find.fill("")
        expect(page.locator("#schema details:visible")).to_have_count(12)
        expect(page.locator("#schema-count")).to_be_hidden()
        assert page.locator("#schema b").count() == 0
        w.assert_clean()


def test_laptop_screenshot(shop: LiveServer, open_page, tmp_path_factory: pytest.TempPathFactory) -> None:
    w = open_page(shop, width=1280, height=900)
    page = w.page
    page.locator("#schema details", has_text="orders").first.locator("summary").click()
    w.ask("What is the total revenue per month?")
    expect(page.locator("#chart")).to_have_attribute("data-kind", "line")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    path = screenshot_dir(tmp_path_factory) / "laptop.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 10_000
    w.assert_clean()


# --- hostile values: untrusted text stays data ------------------------------------------------------------

HOSTILE_EXPLANATION = ("<img src=x onerror=\"document.title='pwned';window.pwned=1\">"
                       "\x1b]0;pwned\x07 [bold]reads[/bold] the \u202eevil\u202c table\nsecond line")
HOSTILE_QUESTION = "Show every hostile value"
HOSTILE_ANSWER_SQL = f"SELECT label, value FROM hostile WHERE id <= {len(hostile.HOSTILE_VALUES)} ORDER BY id"


def hostile_responder(messages: tuple[Message, ...], options: GenerationOptions) -> str:
    if messages[0].content.startswith("You review SQL"):
        return HOSTILE_EXPLANATION
    return f"```sql\n{HOSTILE_ANSWER_SQL}\n```"


@pytest.fixture(scope="module")
def hostile_server(module_env: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("web-hostile")
    path = hostile.build_hostile_db(folder / "hostile.sqlite")
    catalog = Catalog({"hostile": DatabaseEntry("hostile", str(path), description="Values that look like code.")})
    with live_server(server_settings(catalog, FakeLLM(responder=hostile_responder), folder)) as server:
        server.db_path = path  # type: ignore[attr-defined]
        yield server


def expected_values(path: Path) -> dict[str, str]:
    """label -> the text a cell must show: the stored value (undecodable bytes as U+FFFD), made visible."""
    return {label: visible(raw.decode("utf-8", "replace"), max_chars=CELL_CHARS)
            for label, raw in hostile.stored_values(path).items()}


def assert_not_pwned(w: Watched) -> None:
    page = w.page
    assert page.title() == "sqlweave"
    assert page.evaluate("typeof window.pwned") == "undefined"
    # nothing from the data became an element that runs or loads anything
    assert page.evaluate("[...document.querySelectorAll('script')].map((e) => e.getAttribute('src'))") == [
        *(f"/static/vendor/{name}" for name in VENDORED), "/static/app.js"]
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed, link[rel=import]').length") == 0
    assert page.evaluate("""[...document.querySelectorAll('*')].filter((e) =>
        [...e.attributes].some((a) => a.name.startsWith('on'))).length""") == 0
    assert page.evaluate("document.querySelectorAll('b, i, svg[onload], a[href]').length") == 0
    w.assert_clean()


def test_hostile_values_are_shown_as_written(hostile_server: LiveServer, open_page,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    w = open_page(hostile_server)
    page = w.page
    expected = expected_values(hostile_server.db_path)
    # names in the schema, each exactly as written (controls as escapes)
    for summary in page.locator("#schema summary").all():
        summary.click()
    table_names = page.locator("#schema .table-name").all_text_contents()
    assert sorted(table_names) == sorted([visible(hostile.HOSTILE_TABLE), "hostile"])
    col_names = page.locator("#schema .col-name").all_text_contents()
    for name in hostile.HOSTILE_COLUMNS:
        assert visible(name) in col_names
    # every value of the hostile table, page by page, through the SQL editor
    w.run_sql("SELECT label, value FROM hostile ORDER BY id")
    shown: dict[str, str] = {}
    while True:
        for row in w.cells():
            label, value = row.split("\t", 1)
            shown[label] = value
        if page.locator("#pager").is_hidden() or page.locator("#next-page").is_disabled():
            break
        page.click("#next-page")
    page.click("#prev-page")
    page.screenshot(path=str(screenshot_dir(tmp_path_factory) / "hostile.png"), full_page=True)
    page.click("#next-page")
    assert shown.keys() == expected.keys()
    for label, text in expected.items():
        assert shown[label] == text, label
    assert shown["osc-title-clear"] == "\\x1b]0;pwned\\x07\\x1b[2J"
    assert shown["bidi-override"] == "invoice\\u202egnp.exe"
    assert shown["megabyte"].endswith(f"… ({len(hostile.MEGABYTE) - CELL_CHARS} more characters)")
    # the megabyte value (last page) can be seen whole
    big = page.locator("#result-table tbody tr", has_text="megabyte").locator("td").nth(1)
    big.locator("button.show-all").click()
    assert big.evaluate("(td) => td.textContent.length") == len(hostile.MEGABYTE)
    assert big.evaluate("(td) => td.textContent.endsWith(' END')")
    # the escapes are marked up as escapes (styled), the text around them as plain text
    page.click("#prev-page")
    cell = page.locator("#result-table td", has_text="invoice")
    assert cell.locator(".esc").all_text_contents() == ["\\u202e"]
    assert_not_pwned(w)


def test_hostile_names_in_the_table_and_the_chart(hostile_server: LiveServer, open_page) -> None:
    w = open_page(hostile_server)
    page = w.page
    quoted = '"' + hostile.HOSTILE_TABLE.replace('"', '""') + '"'
    w.run_sql(f"SELECT * FROM {quoted}")
    assert w.headers() == [visible(c) for c in hostile.HOSTILE_COLUMNS]
    assert w.cells() == ["\t".join(visible(v) for v in row) for row in hostile.HOSTILE_NAME_ROWS]
    # the SQL with an ESC inside it is shown with the escape, in the highlighted view
    page.click("#edit-sql")
    assert "\\x1b" in page.locator("#sql-code").text_content()
    # a bar chart whose labels and tooltips are the hostile values
    n = len(hostile.HOSTILE_VALUES)
    w.run_sql(f"SELECT value, id AS rank FROM hostile WHERE id <= {n} ORDER BY id")  # an id is never the measure
    expect(page.locator("#chart")).to_have_attribute("data-kind", "bar")
    chart = chart_state(page)
    assert chart["type"] == "bar" and chart["elements"] == n and chart["values"] == list(range(1, n + 1))
    # the labels are the values made visible (and shortened), painted on the canvas: no element comes from them
    assert len(chart["labels"]) == n and chart["others"] == 0 and chart["canvases"] == 1
    for shown, (_, v) in zip(chart["labels"], hostile.HOSTILE_VALUES):
        assert visible(v, max_chars=None).startswith(shown.rstrip("…")), shown
        assert not any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 or 0x202A <= ord(ch) <= 0x202E for ch in shown), shown
    tips = [page.evaluate(CHART_TOOLTIP, i) for i in range(n)]
    assert tips == [[visible(v, max_chars=None), str(i)] for i, (_, v) in enumerate(hostile.HOSTILE_VALUES, 1)]
    assert_not_pwned(w)


def test_hostile_answer_explanation_and_suggestions(hostile_server: LiveServer, open_page) -> None:
    w = open_page(hostile_server)
    page = w.page
    w.ask(HOSTILE_QUESTION)
    labels = [label for label, _ in hostile.HOSTILE_VALUES]
    values = {label: visible(v, max_chars=CELL_CHARS) for label, v in hostile.HOSTILE_VALUES}
    rows = w.cells()
    assert [r.split("\t", 1)[0] for r in rows] == labels[:25]
    for row in rows:
        label, value = row.split("\t", 1)
        assert value == values[label], label
    # the model's explanation is plain text: markup and script stay characters, controls become escapes
    page.click("#explain-sql")
    expect(page.locator("#explanation")).to_be_visible()
    assert page.locator("#explanation-text").text_content() == visible(HOSTILE_EXPLANATION, max_chars=None,
                                                                        keep_newlines=True)
    # the conversation list and the turns show the question and SQL as text
    expect(page.locator("#turns .turn-q")).to_have_text(HOSTILE_QUESTION)
    # suggestions drawn from hostile values are chips of plain text
    for chip in page.locator("#suggestions .chip").all_text_contents():
        assert "\x1b" not in chip and "\u202e" not in chip
    assert_not_pwned(w)


# --- the real embedded model --------------------------------------------------------------------------------


@pytest.mark.model
def test_real_model_through_the_page(module_env: Path, tmp_path: Path, open_page,
                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    """What ``sqlweave serve --demo`` does, with the embedded model: 60 customers, then monthly revenue."""
    from sqlweave.llm.registry import get_llm

    llm = get_llm("local:1.5b", cache=True)
    with live_server(server_settings(Catalog.demo(), llm, tmp_path)) as server:
        w = open_page(server)
        page = w.page
        w.ask("How many customers are there?", timeout_s=600)
        assert w.cells() == ["60"], page.locator("#sql-code").text_content()
        page.click("#new-conversation")  # a question of its own (a shorter prompt)
        w.ask("What is the total revenue per month?", timeout_s=600)
        sql = page.locator("#sql-code").text_content()
        expect(page.locator("#chart")).to_have_attribute("data-kind", "line")
        assert chart_state(page)["type"] == "line", sql
        path = screenshot_dir(tmp_path_factory) / "laptop-real-model.png"
        page.screenshot(path=str(path))
        w.assert_clean()


def test_an_error_that_may_pass_offers_to_try_again(module_env: Path, tmp_path: Path, open_page) -> None:
    """A SQLite file another program holds locked while writing: the run fails as ``database_unavailable`` with a
    "Try again" button (a refused statement gets none); once the writer is done, the button gives the rows."""
    import sqlite3

    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE item (name TEXT)")
        con.executemany("INSERT INTO item VALUES (?)", [("lamp",), ("drill",)])
    catalog = Catalog({"shop": DatabaseEntry("shop", str(path), timeout_s=1.0)})
    with live_server(server_settings(catalog, FakeLLM(), tmp_path)) as server:
        w = open_page(server)
        page = w.page
        w.run_sql("DROP TABLE item")
        expect(page.locator("#sql-error .err-code")).to_have_text("refused_statement")
        expect(page.locator("#sql-error .err-retry")).to_have_count(0)  # trying again would not help
        writer = sqlite3.connect(path, isolation_level=None)
        writer.execute("BEGIN EXCLUSIVE")
        try:
            w.run_sql("SELECT name FROM item ORDER BY name")
            expect(page.locator("#sql-error .err-code")).to_have_text("database_unavailable")
            retry = page.locator("#sql-error .err-retry")
            expect(retry).to_have_text("Try again")
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        before = w.counter("ran")
        retry.click()
        w.wait_counter("ran", before + 1)
        assert w.cells() == ["drill", "lamp"]
        expect(page.locator("#sql-error")).to_be_hidden()
        w.assert_clean(allow_http=(400, 503))


# --- waiting, told truly ---------------------------------------------------------------------------------


def test_progress_names_the_stage_running_now_in_words_and_the_queue_stays_current(shop: LiveServer,
                                                                                  open_page) -> None:
    w = open_page(shop)
    page = w.page
    before = w.counter("asked")
    page.fill("#question", "Slowly, how many products are there?")
    page.click("#ask-button")
    expect(page.locator("#queue-status")).to_contain_text("Writing SQL…", timeout=10_000)
    expect(page.locator("#health")).to_contain_text("1 running", timeout=10_000)  # polled while it runs
    w.wait_counter("asked", before + 1)
    names = page.locator("#stages .stage-name").all_text_contents()
    assert names[:2] == ["Reading the question", "Reading the schema"] and "Writing SQL" in names
    assert page.locator("#stages .stage-name").first.get_attribute("title") == "check_question"
    expect(page.locator("#health")).to_contain_text("0 running")
    w.assert_clean()


def test_an_empty_question_says_why_nothing_happens(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page
    page.fill("#question", "   ")
    page.click("#ask-button")
    expect(page.locator("#question-note")).to_be_visible()
    expect(page.locator("#question-note")).to_contain_text("Type a question first")
    assert w.posted("/api/ask/stream") == []
    w.assert_clean()


def test_the_method_menu_says_the_seconds_measured_on_this_server(shop: LiveServer, open_page) -> None:
    shop.api("POST", "/api/ask", json={"database": "shop", "question": "How many customers are there?"})
    w = open_page(shop)
    option = w.page.locator("#preset option[value=default]")
    expect(option).to_contain_text(" s here")
    assert "on this server" in (option.get_attribute("title") or "")
    w.assert_clean()


@pytest.mark.parametrize("width,height", [(1366, 900), (390, 844)])
def test_a_walk_ask_follow_up_edit_run_right_and_a_pasted_text(shop: LiveServer, open_page, width: int,
                                                               height: int, tmp_path_factory) -> None:
    from sqlweave.feedback import PendingExamples

    w = open_page(shop, width=width, height=height)
    page = w.page
    shots = screenshot_dir(tmp_path_factory)
    w.ask("Which customers are from Canada?")
    w.ask("How many of them are there?")
    expect(page.locator("#answer-meta .restated")).to_have_text("read as: “How many customers are from Canada?”")
    page.screenshot(path=str(shots / f"walk-{width}-follow-up.png"), full_page=True)
    page.click("#edit-sql")
    edited = "SELECT COUNT(*) AS canadians FROM customers WHERE country = 'Canada'"
    w.run_sql(edited)
    expect(page.locator("#answer-meta .own-query")).to_have_text("your query")
    page.click("#thumbs-up")
    expect(page.locator("#feedback-status")).to_contain_text("sent for review")
    assert ("How many of them are there?", edited) in {(p.question, p.sql) for p in PendingExamples.of().waiting()}
    page.screenshot(path=str(shots / f"walk-{width}-edited-right.png"), full_page=True)
    page.click("#new-conversation")
    pasted = ("Lorem ipsum dolor sit amet. " * 120)[:3000]
    page.fill("#question", pasted)
    assert len(page.locator("#question").input_value()) == 3000  # not cut silently
    before = w.counter("asked")
    page.click("#ask-button")
    w.wait_counter("asked", before + 1)
    expect(page.locator("#answer-error .err-message")).to_have_text(
        "the question is 3000 characters long; the limit is 2000")
    expect(page.locator("#answer-error .err-hint")).to_contain_text("one focused question")
    expect(page.locator("#sql-box")).to_be_hidden()  # the earlier answer's SQL is not shown as this one's
    expect(page.locator("#queue-status")).to_have_text("Not asked: see why below.")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(shots / f"walk-{width}-pasted.png"), full_page=True)
    w.assert_clean(allow_http=(422,))


def test_a_vote_shows_which_sample_is_being_drawn(shop: LiveServer, open_page) -> None:
    w = open_page(shop)
    page = w.page

    def as_vote(route: Any) -> None:  # the vote preset samples four readings, one after another
        body = json.loads(route.request.post_data or "{}")
        route.continue_(post_data=json.dumps({**body, "preset": "vote"}))

    page.route("**/api/ask/stream", as_vote)
    before = w.counter("asked")
    page.fill("#question", "Sampling, how many products are there?")
    page.click("#ask-button")
    expect(page.locator("#queue-status")).to_contain_text(re.compile(r"Trying other readings [2-4]/\d"),
                                                          timeout=15_000)
    w.wait_counter("asked", before + 1)
    assert "Trying other readings" in page.locator("#stages .stage-name").all_text_contents()
    w.assert_clean()
