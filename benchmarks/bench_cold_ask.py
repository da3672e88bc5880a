"""A cold `sqlweave ask` (a new process) on a database asked before, with and without the prompt states on disk.

    .venv/bin/python benchmarks/bench_cold_ask.py --out benchmarks/results/cold-ask.json

Each mode has its own cache folder (the model weights are shared) and asks the demo database once to warm up
("asked before"); then each question runs as a fresh process in both modes, alternating, so both see the same
machine load. The response cache is off (``--no-cache``): every answer is computed. Prints the median wall-clock
seconds of a whole process (start, model load, answer, exit) per mode, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTIONS = ["How many customers are there?", "How many products are there?", "How many orders are there?",
             "Which country has the most customers?", "What is the average price of a product?"]
WARM_UP = "How many customers live in Canada?"


def ask(question: str, cache: Path, states: bool, model: str) -> tuple[float, bool]:
    from sqlweave.llm.weights import model_dir

    env = {**os.environ, "SQLWEAVE_CACHE_DIR": str(cache), "SQLWEAVE_MODEL_DIR": str(model_dir()),
           "SQLWEAVE_PROMPT_STATES": "1" if states else "0"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sqlweave.cli", "ask", "--db", _demo(), "--model", model,
                           "--no-cache", "--json", question], env=env, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - start, proc.returncode == 0


def _demo() -> str:
    from sqlweave.db.demo import demo_database_path

    return str(demo_database_path())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local:1.5b")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sqlweave-cold-"))
    caches = {"off": root / "off", "on": root / "on"}
    for mode, cache in caches.items():
        ask(WARM_UP, cache, mode == "on", args.model)
    seconds: dict[str, list[float]] = {"off": [], "on": []}
    ok: dict[str, int] = {"off": 0, "on": 0}
    for q in QUESTIONS[: args.questions]:
        for mode in ("off", "on"):
            s, good = ask(q, caches[mode], mode == "on", args.model)
            seconds[mode].append(s)
            ok[mode] += good
    med = {m: statistics.median(v) for m, v in seconds.items()}
    print("| prompt states on disk | questions | answered | median s per cold `ask` | all runs (s) |")
    print("|---|---|---|---|---|")
    for mode in ("off", "on"):
        print(f"| {mode} | {len(seconds[mode])} | {ok[mode]} | {med[mode]:.2f} | "
              f"{', '.join(f'{s:.1f}' for s in seconds[mode])} |")
    print(f"\nratio off / on: {med['off'] / med['on']:.1f}x")
    if args.out:
        args.out.write_text(json.dumps({"model": args.model, "seconds": seconds, "median": med, "answered": ok,
                                        "ratio": med["off"] / med["on"]}, indent=2) + "\n")


if __name__ == "__main__":
    main()
