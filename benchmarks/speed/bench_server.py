"""Load on `sqlweave serve`: 100 concurrent clients asking questions and follow-ups over HTTP.

    .venv/bin/python benchmarks/speed/bench_server.py                       # fake model, then the embedded 0.5B model
    .venv/bin/python benchmarks/speed/bench_server.py --phase fake          # only the fake model (seconds)
    .venv/bin/python benchmarks/speed/bench_server.py --phase local --duration 600

Each phase starts the server as a subprocess on a free loopback port (the demo shop, a fresh conversation
store, the default model queue: 1 running + 16 waiting, no rate limit since every client shares one address).
Then ``--clients`` clients (httpx.AsyncClient) each ask ``--questions`` questions at once: a first question,
``--followups`` follow-ups in the same conversation, then a new conversation. A client that gets 503 ``busy``
waits for ``Retry-After`` and asks again (every 503 is counted). The fake phase's model sleeps
``--fake-delay`` seconds per call; the local phase uses ``local:0.5b`` with the response cache off, and clients
stop asking at ``--duration`` seconds (what is still unanswered then is reported as given up).

Reported per phase: responses by status (200, 503, other 4xx, other 5xx: must be 0), lost conversation turns
(turns answered 200 minus turns the store holds, per conversation), p50/p95 latency of answered requests,
p50/p95 queue wait (the server's ``timings.queue_wait_s``), answers per second. Prints a table and writes
benchmarks/results/server-load.json (each phase's entry is replaced when it runs again).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, RESULTS
OUT = RESULTS / "server-load.json"

#: Conversations on the demo shop: a first question and its follow-ups (with the SQL the fake model answers).
SCRIPTS: list[list[tuple[str, str]]] = [
    [("Which customers are from Canada?", "SELECT first_name, last_name FROM customers WHERE country = 'Canada'"),
     ("How many of them are there?", "SELECT COUNT(*) FROM customers WHERE country = 'Canada'"),
     ("Only those from Toronto?", "SELECT first_name, last_name FROM customers WHERE country = 'Canada' "
                                  "AND city = 'Toronto'")],
    [("How many orders per status?", "SELECT status, COUNT(*) FROM orders GROUP BY status"),
     ("Only the delivered ones, per month?", "SELECT strftime('%Y-%m', order_date) AS month, COUNT(*) FROM orders "
                                             "WHERE status = 'delivered' GROUP BY month ORDER BY month"),
     ("And the cancelled ones?", "SELECT strftime('%Y-%m', order_date) AS month, COUNT(*) FROM orders "
                                 "WHERE status = 'cancelled' GROUP BY month ORDER BY month")],
    [("Which 5 products have the highest price?", "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"),
     ("What are their categories?", "SELECT p.name, c.name FROM products p JOIN categories c "
                                    "ON p.category_id = c.category_id ORDER BY p.price DESC LIMIT 5"),
     ("And their stock?", "SELECT name, stock FROM products ORDER BY price DESC LIMIT 5")],
    [("How many customers are there?", "SELECT COUNT(*) FROM customers"),
     ("How many of them are from France?", "SELECT COUNT(*) FROM customers WHERE country = 'France'"),
     ("And from Germany?", "SELECT COUNT(*) FROM customers WHERE country = 'Germany'")],
    [("What is the total revenue per product category?",
      "SELECT c.name, SUM(oi.quantity * oi.unit_price) FROM order_items oi JOIN products p "
      "ON oi.product_id = p.product_id JOIN categories c ON p.category_id = c.category_id GROUP BY c.name"),
     ("Only for delivered orders?",
      "SELECT c.name, SUM(oi.quantity * oi.unit_price) FROM order_items oi JOIN orders o ON oi.order_id = o.order_id "
      "JOIN products p ON oi.product_id = p.product_id JOIN categories c ON p.category_id = c.category_id "
      "WHERE o.status = 'delivered' GROUP BY c.name"),
     ("Which category is the largest?",
      "SELECT c.name FROM order_items oi JOIN products p ON oi.product_id = p.product_id JOIN categories c "
      "ON p.category_id = c.category_id GROUP BY c.name ORDER BY SUM(oi.quantity * oi.unit_price) DESC LIMIT 1")],
]
FAKE_SQL = {q: sql for script in SCRIPTS for q, sql in script}


# --- the server side (run as a subprocess: --serve MODEL) -------------------------------------------------


def serve(args: argparse.Namespace) -> None:
    from sqlweave.catalog import Catalog
    from sqlweave.server import ServerSettings, run

    if args.serve == "fake":
        from sqlweave.llm.fake import FakeLLM

        delay = args.fake_delay

        def responder(messages: Any, options: Any) -> str:
            time.sleep(delay)  # the model's time, as the embedded model would hold its slot
            q = messages[-1].content.rsplit("Question:", 1)[-1].strip()
            return f"```sql\n{FAKE_SQL.get(q, 'SELECT COUNT(*) FROM products')}\n```"

        llm: Any = FakeLLM(responder=responder)
    else:
        from sqlweave.llm.registry import get_llm

        llm = get_llm(args.serve, cache=False)
    settings = ServerSettings(Catalog.demo(), llm=llm, api_key="", port=args.port, queue_size=args.queue_size,
                              rate_limit_per_minute=0, conversation_url=args.conv_url,
                              queue_timeout_s=args.queue_timeout, feedback_log=Path(args.conv_url[10:]).parent
                              / "feedback.jsonl")
    run(settings)


# --- the client side ---------------------------------------------------------------------------------------


@dataclass
class Tally:
    statuses: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)  # seconds, answered (200) requests
    queue_waits: list[float] = field(default_factory=list)
    answered_ok: int = 0  # 200 with no error in the answer
    answered_failed: int = 0  # 200 with an error (a failed answer is still a result)
    given_up: int = 0
    turns_answered: dict[str, int] = field(default_factory=dict)  # conversation id -> 200 answers
    transport_errors: int = 0
    busy_after_waiting: int = 0  # 503s that came after waiting in line too long (the rest: line full at once)

    def count(self, status: int | str) -> None:
        key = str(status)
        self.statuses[key] = self.statuses.get(key, 0) + 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_healthy(base: str, proc: subprocess.Popen, timeout_s: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(base_url=base, timeout=5) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited with status {proc.returncode}")
            try:
                if (await client.get("/api/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
    raise SystemExit("the server did not become healthy in time")


async def ask(client: Any, tally: Tally, body: dict[str, Any], deadline: float) -> dict[str, Any] | None:
    """One question, retried after 503 (honouring Retry-After) until answered or ``deadline``."""
    import httpx

    while True:
        if time.monotonic() >= deadline:
            tally.given_up += 1
            return None
        start = time.perf_counter()
        try:
            r = await client.post("/api/ask", json=body)
        except httpx.HTTPError:
            tally.transport_errors += 1
            await asyncio.sleep(1.0)
            continue
        elapsed = time.perf_counter() - start
        tally.count(r.status_code)
        if r.status_code == 200:
            a = r.json()
            tally.latencies.append(elapsed)
            tally.queue_waits.append(a["timings"]["queue_wait_s"])
            if a["error"] is None:
                tally.answered_ok += 1
            else:
                tally.answered_failed += 1
            cid = a["conversation_id"]
            tally.turns_answered[cid] = tally.turns_answered.get(cid, 0) + 1
            return a
        if r.status_code == 503:
            if r.json().get("error", {}).get("message", "").startswith("waited"):
                tally.busy_after_waiting += 1  # waited the server's queue_timeout_s without a turn
            retry = float(r.headers.get("retry-after", "1"))
            await asyncio.sleep(min(retry, 30.0) * (0.5 + random.random()))
            continue
        return None  # another status: counted, not retried


async def client_session(client: Any, tally: Tally, i: int, questions: int, followups: int,
                         deadline: float) -> None:
    asked = 0
    script_no = i
    while asked < questions:
        script = SCRIPTS[script_no % len(SCRIPTS)]
        script_no += 1
        conversation_id = None
        for turn, (question, _) in enumerate(script[: 1 + followups]):
            if asked >= questions:
                break
            body: dict[str, Any] = {"database": "shop", "question": question}
            if conversation_id is not None:
                body["conversation_id"] = conversation_id
            a = await ask(client, tally, body, deadline)
            asked += 1
            if a is None:
                break
            conversation_id = a["conversation_id"]


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return round(ordered[k], 3)


async def load(base: str, args: argparse.Namespace, questions: int, duration: float) -> dict[str, Any]:
    import httpx

    tally = Tally()
    limits = httpx.Limits(max_connections=args.clients + 20, max_keepalive_connections=args.clients + 20)
    async with httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(args.request_timeout), limits=limits) as client:
        # warm-up (not counted): loads the model and its prompt prefix
        await client.post("/api/ask", json={"database": "shop", "question": "How many customers are there?"},
                          timeout=900)
        start = time.perf_counter()
        deadline = time.monotonic() + duration
        await asyncio.gather(*(client_session(client, tally, i, questions, args.followups, deadline)
                               for i in range(args.clients)))
        wall = time.perf_counter() - start
        stored: dict[str, int] = {}
        for cid in tally.turns_answered:
            r = await client.get(f"/api/conversations/{cid}")
            stored[cid] = len(r.json()["turns"]) if r.status_code == 200 else 0
        health = (await client.get("/api/health")).json()
    lost = sum(max(0, n - stored.get(cid, 0)) for cid, n in tally.turns_answered.items())
    extra = sum(max(0, stored.get(cid, 0) - n) for cid, n in tally.turns_answered.items())
    s = tally.statuses
    other_5xx = sum(n for k, n in s.items() if k.startswith("5") and k != "503")
    other_4xx = sum(n for k, n in s.items() if k.startswith("4"))
    answered = s.get("200", 0)
    return {
        "clients": args.clients, "questions_per_client": questions, "followups": args.followups,
        "queue": {"running": 1, "waiting": args.queue_size}, "duration_limit_s": duration,
        "wall_s": round(wall, 2), "questions_asked": args.clients * questions,
        "responses": {"200": answered, "503": s.get("503", 0), "503_after_waiting": tally.busy_after_waiting,
                      "other_4xx": other_4xx, "other_5xx": other_5xx, "by_status": dict(sorted(s.items()))},
        "answers_ok": tally.answered_ok, "answers_failed": tally.answered_failed, "given_up": tally.given_up,
        "transport_errors": tally.transport_errors,
        "conversations": len(tally.turns_answered), "turns_answered": sum(tally.turns_answered.values()),
        "turns_stored": sum(stored.values()), "lost_turns": lost, "unexpected_turns": extra,
        "latency_s": {"p50": pct(tally.latencies, 50), "p95": pct(tally.latencies, 95),
                      "max": pct(tally.latencies, 100)},
        "queue_wait_s": {"p50": pct(tally.queue_waits, 50), "p95": pct(tally.queue_waits, 95),
                         "max": pct(tally.queue_waits, 100)},
        "answers_per_s": round(answered / wall, 2) if wall else None,
        "queue_after": health["queue"],
    }


def run_phase(args: argparse.Namespace, model: str) -> dict[str, Any]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="sqlweave-bench-") as tmp:
        conv_url = f"sqlite:///{tmp}/conversations.sqlite"
        log_path = Path(tmp) / "server.log"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--serve", model, "--port", str(port),
               "--conv-url", conv_url, "--queue-size", str(args.queue_size), "--fake-delay", str(args.fake_delay),
               "--queue-timeout", str(args.queue_timeout)]
        with log_path.open("wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
            try:
                asyncio.run(wait_healthy(base, proc, 600))
                questions = args.questions if model == "fake" else args.local_questions
                duration = 3600.0 if model == "fake" else args.duration
                result = asyncio.run(load(base, args, questions, duration))
            finally:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        json_lines = sum(1 for line in lines if line.startswith("{"))
        errors = [line for line in lines if '"level": "error"' in line]
        result["server_log"] = {"lines": len(lines), "json_lines": json_lines, "error_lines": len(errors),
                                "first_error": errors[0][:500] if errors else None}
    result["model"] = model
    if model == "fake":
        result["fake_model_delay_s"] = args.fake_delay
    return result


def show(results: dict[str, dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="sqlweave serve under load (1 process, model queue 1 running + waiting)")
    table.add_column("phase")
    for col in ("clients x q", "200", "503", "other 5xx", "ok / failed", "gave up", "lost turns",
                "latency p50/p95 s", "queue wait p50/p95 s", "answers/s", "wall s"):
        table.add_column(col, justify="right")
    for name, r in results.items():
        rs = r["responses"]
        table.add_row(name, f"{r['clients']} x {r['questions_per_client']}", str(rs["200"]), str(rs["503"]),
                      str(rs["other_5xx"]), f"{r['answers_ok']} / {r['answers_failed']}", str(r["given_up"]),
                      str(r["lost_turns"]), f"{r['latency_s']['p50']} / {r['latency_s']['p95']}",
                      f"{r['queue_wait_s']['p50']} / {r['queue_wait_s']['p95']}", str(r["answers_per_s"]),
                      str(r["wall_s"]))
    Console(width=max(160, Console().width)).print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phase", choices=("fake", "local", "both"), default="both")
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--questions", type=int, default=3, help="questions per client with the fake model")
    ap.add_argument("--local-questions", type=int, default=2, help="questions per client with the 0.5B model")
    ap.add_argument("--followups", type=int, default=1, help="follow-ups in each conversation")
    ap.add_argument("--fake-delay", type=float, default=0.05, help="seconds the fake model takes per call")
    ap.add_argument("--local-model", default="local:0.5b")
    ap.add_argument("--duration", type=float, default=600.0, help="seconds clients keep asking the local model")
    ap.add_argument("--queue-size", type=int, default=16)
    ap.add_argument("--queue-timeout", type=float, default=300.0)
    ap.add_argument("--request-timeout", type=float, default=900.0)
    ap.add_argument("--out", type=Path, default=OUT)
    # internal: run the server itself
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--conv-url", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args)
        return

    phases = {"fake": ["fake"], "local": [args.local_model], "both": ["fake", args.local_model]}[args.phase]
    existing: dict[str, Any] = {}
    if args.out.exists():
        existing = json.loads(args.out.read_text())
    results: dict[str, Any] = dict(existing.get("phases", {}))
    command = " ".join([".venv/bin/python", "benchmarks/speed/bench_server.py"] + sys.argv[1:])
    for model in phases:
        results[model] = run_phase(args, model)
        results[model]["command"] = command
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "benchmark": "server-load", "date": date.today().isoformat(), "machine": {
                "python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
            "phases": results,
        }, indent=2) + "\n")
    show({k: v for k, v in results.items() if k in phases})
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    bad = [k for k in phases if results[k]["responses"]["other_5xx"] or results[k]["lost_turns"]]
    if bad:
        raise SystemExit(f"server errors or lost turns in: {', '.join(bad)}")


if __name__ == "__main__":
    main()
