"""A cold `sqlweave ask` (a new process) on a database asked before: with and without the prompt states on disk,
or one pipeline against another.

    .venv/bin/python benchmarks/speed/bench_cold_ask.py --out benchmarks/results/cold-ask.json
    .venv/bin/python benchmarks/speed/bench_cold_ask.py --pipelines default,default+link --reworded \
        --out benchmarks/results/cold-ask-link.json
    .venv/bin/python benchmarks/speed/bench_cold_ask.py --schema-cache --db postgresql://.../large301 --delay-ms 2.5 \
        --large-questions 3 --out benchmarks/results/cold-ask-schema.json

Each mode has its own cache folder (the model weights are shared) and asks the demo database once to warm up
("asked before"); then each question runs as a fresh process in every mode, alternating, so all modes see the same
machine load. The response cache is off (``--no-cache``): every answer is computed. Prints the median wall-clock
seconds of a whole process (start, model load, answer, exit) per mode, and their ratio.

Without ``--pipelines`` the modes are ``default`` with the prompt states off and on. With ``--pipelines A,B`` they are
those pipelines, both with the prompt states on. ``--reworded`` asks the same questions in words that no table or
column of the demo database uses ("clients" for customers), which is when ``+link`` loads its embedding model.
With ``--schema-cache`` they are ``default`` with the schemas kept on disk off and on (prompt states on for both).

``--db`` asks another database (``--large-questions N``: the first N questions of the 301-table benchmark,
``benchmarks/schema/build_large_schema.py``, whose tables are those of ``--db``), through a proxy on this machine that holds
every packet ``--delay-ms`` each way when given (a server that far away).
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
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md

QUESTIONS = ["How many customers are there?", "How many products are there?", "How many orders are there?",
             "Which country has the most customers?", "What is the average price of a product?"]
REWORDED = ["How many clients are there?", "How many items are for sale?", "How many purchases were made?",
            "Which nation has the most clients?", "What is the mean cost of an item?"]
WARM_UP = "How many customers live in Canada?"


@dataclass(frozen=True)
class Mode:
    name: str
    pipeline: str
    states: bool
    schemas: bool = True


def ask(question: str, cache: Path, mode: Mode, model: str, db: str) -> tuple[float, bool]:
    from sqlweave.llm.weights import model_dir

    env = {**os.environ, "SQLWEAVE_CACHE_DIR": str(cache), "SQLWEAVE_MODEL_DIR": str(model_dir()),
           "SQLWEAVE_PROMPT_STATES": "1" if mode.states else "0", "SQLWEAVE_SCHEMA_CACHE": "1" if mode.schemas else "0"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sqlweave.cli", "ask", "--db", db, "--model", model,
                           "--pipeline", mode.pipeline, "--no-cache", "--json", question],
                          env=env, capture_output=True, text=True, timeout=1800)
    return time.perf_counter() - start, proc.returncode == 0


def _demo() -> str:
    from sqlweave.db.demo import demo_database_path

    return str(demo_database_path())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local:1.5b")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--pipelines", help="compare these pipelines (comma-separated), prompt states on for all")
    parser.add_argument("--reworded", action="store_true", help="ask in words the schema does not use")
    parser.add_argument("--schema-cache", action="store_true", help="compare schemas kept on disk off and on")
    parser.add_argument("--db", help="ask this database instead of the demo shop")
    parser.add_argument("--large-questions", type=int, default=0,
                        help="ask the first N questions of the 301-table benchmark (with --db)")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="reach --db through a proxy this far each way")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    db = args.db or _demo()
    if args.db and args.delay_ms > 0:
        from sqlalchemy.engine import make_url

        from benchmarks.schema.bench_cold_schema import DelayProxy

        url = make_url(args.db)
        proxy = DelayProxy(url.host or "127.0.0.1", url.port or 5432, args.delay_ms / 1000)
        db = url.set(host="127.0.0.1", port=proxy.listen_port).render_as_string(hide_password=False)
    if args.schema_cache:
        modes = [Mode("read every time", "default", True, False), Mode("kept on disk", "default", True, True)]
        header = "schemas"
    elif args.pipelines:
        modes = [Mode(p, p, True) for p in args.pipelines.split(",") if p]
        header = "pipeline (prompt states on)"
    else:
        modes = [Mode("off", "default", False), Mode("on", "default", True)]
        header = "prompt states on disk"
    questions = (REWORDED if args.reworded else QUESTIONS)[: args.questions]
    warm_up = WARM_UP
    if args.large_questions:
        from sqlweave.config import cache_dir

        large = json.loads((cache_dir() / "benchmarks" / "large-schema" / "questions.json").read_text())
        warm_up, *questions = [q["question"] for q in large[: args.large_questions + 1]]
    root = Path(tempfile.mkdtemp(prefix="sqlweave-cold-"))
    caches = {m.name: root / f"cache-{i}" for i, m in enumerate(modes)}
    for m in modes:
        ask(warm_up, caches[m.name], m, args.model, db)
    seconds: dict[str, list[float]] = {m.name: [] for m in modes}
    ok: dict[str, int] = {m.name: 0 for m in modes}
    for q in questions:
        for m in modes:
            s, good = ask(q, caches[m.name], m, args.model, db)
            seconds[m.name].append(s)
            ok[m.name] += good
    med = {m: statistics.median(v) for m, v in seconds.items()}
    print(f"| {header} | questions | answered | median s per cold `ask` | all runs (s) |")
    print("|---|---|---|---|---|")
    for m in modes:
        print(f"| {m.name} | {len(seconds[m.name])} | {ok[m.name]} | {med[m.name]:.2f} | "
              f"{', '.join(f'{s:.1f}' for s in seconds[m.name])} |")
    first, last = modes[0].name, modes[-1].name
    print(f"\nratio {first} / {last}: {med[first] / med[last]:.2f}x")
    if args.out:
        args.out.write_text(json.dumps({"model": args.model, "db": args.db or "demo", "delay_ms": args.delay_ms,
                                        "questions": questions,
                                        "modes": [m.__dict__ for m in modes], "seconds": seconds, "median": med,
                                        "answered": ok, "ratio": med[first] / med[last]}, indent=2) + "\n")


if __name__ == "__main__":
    main()
