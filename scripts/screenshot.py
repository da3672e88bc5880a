"""Make docs/screenshot.png, the README's picture of the web page, on purpose (no test writes it): the demo shop
served as `sqlweave serve --demo` serves it, asked "What is the total revenue per month?" in headless Chromium
at 1280x900, the answer's chart in view.

    python scripts/screenshot.py                              # the embedded 1.5B model (a few minutes on a CPU)
    python scripts/screenshot.py --model fake --out /tmp/page.png

Needs the server extra, Playwright (the dev extra) and Chromium (scripts/browser.sh installs it when missing).
The model's answers come from the response cache when it holds them; conversations go to a temporary store.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "screenshot.png"
QUESTION = "What is the total revenue per month?"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    """Chromium's executable (scripts/browser.sh installs it when missing)."""
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "browser.sh")], capture_output=True, text=True,
                          timeout=1200)
    if proc.returncode != 0 or not proc.stdout.strip():
        sys.exit(f"scripts/browser.sh found no Chromium:\n{proc.stderr.strip()}")
    return proc.stdout.strip().splitlines()[-1]


def shoot(model: str, out: Path, timeout_s: float) -> None:
    import uvicorn
    from playwright.sync_api import expect, sync_playwright

    from sqlweave.catalog import Catalog
    from sqlweave.llm.registry import get_llm
    from sqlweave.server import ServerSettings, create_app

    with tempfile.TemporaryDirectory(prefix="sqlweave-screenshot-") as folder:
        settings = ServerSettings(Catalog.demo(), llm=get_llm(model, cache=True), api_key=None,
                                  rate_limit_per_minute=0,
                                  conversation_url=f"sqlite:///{Path(folder) / 'conversations.sqlite'}",
                                  feedback_log=Path(folder) / "feedback.jsonl")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning", access_log=False,
                                               lifespan="on", log_config=None))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            if not thread.is_alive():
                sys.exit("the server did not start")
            time.sleep(0.05)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS, headless=True)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(f"http://127.0.0.1:{sock.getsockname()[1]}/")
                page.locator("#schema details", has_text="orders").first.locator("summary").click()
                page.fill("#question", QUESTION)
                page.click("#ask-button")
                expect(page.locator("body")).to_have_attribute("data-asked", "1", timeout=timeout_s * 1000)
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=False)
                browser.close()
        finally:
            server.should_exit = True
            thread.join(timeout=15)
            sock.close()
    print(f"wrote {out} ({out.stat().st_size} bytes)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local:1.5b", help="the model the page asks (default: local:1.5b)")
    parser.add_argument("--out", type=Path, default=PAGE, help="where to write the picture (default: the README's)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds the answer may take")
    args = parser.parse_args(argv)
    shoot(args.model, args.out, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
