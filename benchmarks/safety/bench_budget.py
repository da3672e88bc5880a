"""One long question cannot hold a shared server: the time budget, measured with the embedded model.

    .venv/bin/python benchmarks/safety/bench_budget.py --out benchmarks/results/budget.json

Part 1 (the server): the HTTP app with the embedded 1.5B model on the demo shop, one question at a time on the
model (``model_concurrency=1``) and an operator ceiling of ``--ceiling`` seconds. A question built to run long (a
pasted text of about 1,900 characters, asked with ``best`` and ``min_confidence`` 0.99, so that it votes, reviews and
samples again) is sent first; ``--delay`` seconds later an ordinary question (``default``) is sent. Reports how long
the long question held the model past its budget, what it returned (cut short or 504), and how long the ordinary
question waited and took in all. The response cache is off.

Part 2 (the cost of the check): the same 1,500-token prompt evaluated from scratch with llama.cpp's abort
callback watching a deadline and without any callback, alternating, ``--rounds`` times each; the median seconds of
each and their ratio.

Run nothing else on the machine meanwhile (the two cores are the measurement).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import write_json  # noqa: E402

LONG = ("pasted from a report, please read all of it carefully and tell me: "
        + " ".join(f"customer {i} ordered products in category {i % 7} and paid with card {i % 3};"
                   for i in range(40)))[:1900] + " Who is our best customer?"
ORDINARY = "How many orders were placed in 2024?"


def part_server(ceiling: float, delay: float) -> dict[str, Any]:
    import tempfile

    from fastapi.testclient import TestClient

    from sqlweave.catalog import Catalog
    from sqlweave.llm.local import LocalLLM
    from sqlweave.server import ServerSettings, create_app

    folder = Path(tempfile.mkdtemp(prefix="sqlweave-budget-"))
    llm = LocalLLM("1.5b")
    settings = ServerSettings(Catalog.demo(), llm=llm, cache=False, api_key="", rate_limit_per_minute=0,
                              max_question_seconds=ceiling, warm_up=False,
                              conversation_url=f"sqlite:///{folder / 'conversations.sqlite'}",
                              feedback_log=folder / "feedback.jsonl", answer_key=folder / "key")
    out: dict[str, Any] = {"ceiling_s": ceiling, "delay_s": delay, "long_chars": len(LONG)}
    with TestClient(create_app(settings, llm=llm), base_url="http://127.0.0.1") as client:
        client.post("/api/ask", json={"database": "shop", "question": "How many customers are there?"})  # load
        slow: dict[str, Any] = {}

        def ask_long() -> None:
            start = time.monotonic()
            r = client.post("/api/ask", json={"database": "shop", "question": LONG, "preset": "best",
                                              "min_confidence": 0.99})
            slow.update(seconds=time.monotonic() - start, status=r.status_code, body=r.json())

        t = threading.Thread(target=ask_long)
        t.start()
        time.sleep(delay)
        start = time.monotonic()
        r = client.post("/api/ask", json={"database": "shop", "question": ORDINARY})
        ordinary_s = time.monotonic() - start
        t.join()
        body = r.json()
        budget = min(ceiling, 180.0)
        out.update({
            "long_status": slow["status"], "long_seconds": round(slow["seconds"], 2),
            "long_over_budget_s": round(slow["seconds"] - budget, 2), "budget_s": budget,
            "long_cut_short": bool(slow["body"].get("cut_short")) if slow["status"] == 200 else None,
            "long_error": (slow["body"].get("error") or {}).get("code"),
            "ordinary_status": r.status_code, "ordinary_total_s": round(ordinary_s, 2),
            "ordinary_queue_wait_s": (body.get("timings") or {}).get("queue_wait_s"),
            "ordinary_rows": body.get("rows"),
        })
    return out


def part_overhead(rounds: int, tokens: int) -> dict[str, Any]:
    from sqlweave.llm.local import _stopping_at, load_llama

    llama = load_llama("1.5b", 8192, 2, state_cache_mb=0)
    words = " ".join(f"column_{i} INTEGER," for i in range(tokens))
    ids = llama.tokenize(words.encode(), add_bos=False)[:tokens]
    times: dict[str, list[float]] = {"without": [], "with": []}
    for _ in range(rounds):
        for mode in ("without", "with"):
            llama.reset()
            start = time.perf_counter()
            if mode == "with":
                with _stopping_at(llama, time.perf_counter() + 3600, None):
                    llama.eval(ids)
            else:
                import llama_cpp

                llama_cpp.llama_set_abort_callback(llama._ctx.ctx, llama_cpp.ggml_abort_callback(0), None)
                llama.__dict__.pop("_sqlweave_watch", None)
                llama.eval(ids)
            times[mode].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"tokens": len(ids), "rounds": rounds, "median_s": {k: round(v, 3) for k, v in med.items()},
            "ratio_with_to_without": round(med["with"] / med["without"], 4),
            "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ceiling", type=float, default=30.0, help="the server's max_question_seconds")
    ap.add_argument("--delay", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=1500)
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
                              "server": part_server(args.ceiling, args.delay)}
    if not args.skip_overhead:
        result["abort_check"] = part_overhead(args.rounds, args.tokens)
    s = result["server"]
    print(f"| long question ({s['long_chars']} chars, best, min_confidence 0.99) | {s['long_seconds']} s, budget "
          f"{s['budget_s']:g} s, over by {s['long_over_budget_s']} s | status {s['long_status']}"
          f" cut_short={s['long_cut_short']} error={s['long_error']} |")
    print(f"| ordinary question sent {s['delay_s']:g} s later | {s['ordinary_total_s']} s in all, "
          f"{s['ordinary_queue_wait_s']} s waiting | status {s['ordinary_status']} rows={s['ordinary_rows']} |")
    if "abort_check" in result:
        o = result["abort_check"]
        print(f"| {o['tokens']}-token prompt, median of {o['rounds']} | without the abort check "
              f"{o['median_s']['without']} s | with it {o['median_s']['with']} s | ratio "
              f"{o['ratio_with_to_without']} |")
    if args.out:
        write_json(args.out, result)


if __name__ == "__main__":
    main()
