"""Seconds per question of pipelines on the same questions, measured in one process, interleaved.

Every question is first asked once untimed (so the instructions-and-schema prefix is evaluated and kept by
llama.cpp for every pipeline alike), then each pipeline answers it in turn, the order alternating from question
to question. No response cache. Prints median and mean seconds, output tokens and tokens per second per pipeline,
and the ratio of medians against the first pipeline; writes JSON.

    .venv/bin/python benchmarks/speed/bench_pipelines.py --pipelines default default+grammar --questions 12 \
        --out benchmarks/results/grammar-speed.json

A pipeline may carry options of its vote stages after ``?`` (``build_pipeline(vote=...)``), so that two settings
of one preset are timed side by side; the seconds of the questions a vote was held on are also reported alone:

    .venv/bin/python benchmarks/speed/bench_pipelines.py --pipelines best "best?examples_prompt=zero_shot_examples" \
        --sample benchmarks/samples/spider-dev-200.json --questions 16 --out benchmarks/results/examples-prompt-speed.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import SPIDER, SAMPLES


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"best?n=8&select=majority"`` as the preset and the options of its vote (a value is JSON when it parses).

    >>> parse_spec("best?n=8&examples_prompt=zero_shot_examples")
    ('best', {'n': 8, 'examples_prompt': 'zero_shot_examples'})
    >>> parse_spec("default")
    ('default', {})
    """
    name, _, query = spec.partition("?")

    def value(raw: str) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            return raw

    return name, {k: value(v) for k, v in parse_qsl(query, keep_blank_values=True)}


def voted(answer: Any) -> bool:
    """Whether a vote stage of ``answer``'s pipeline was held (not skipped) on its question."""
    return any(e.stage.startswith("vote") and not e.notes.get("skipped") for e in answer.trace)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pipelines", nargs="+", default=["default", "default+grammar"])
    ap.add_argument("--questions", type=int, default=12)
    ap.add_argument("--sample", type=Path, default=SAMPLES / "spider-dev-60.json")
    ap.add_argument("--model", default="1.5b")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    from sqlweave.database import Database
    from sqlweave.eval.datasets import load_spider
    from sqlweave.eval.runner import execution_match
    from sqlweave.llm.local import LocalLLM
    from sqlweave.presets import build_pipeline

    ds = load_spider(SPIDER, "dev")
    ids = json.loads(args.sample.read_text())["ids"]
    by_id = {ex.id: ex for ex in ds.examples}
    examples = [by_id[i] for i in ids if i in by_id][: args.questions]
    llm = LocalLLM(args.model)
    pipes = {}
    for spec in args.pipelines:
        name, vote = parse_spec(spec)
        pipes[spec] = build_pipeline(name, vote=vote or None)
    stats: dict[str, dict[str, list[float]]] = {n: {"seconds": [], "tokens": [], "right": [], "voted": []}
                                                for n in pipes}
    for k, ex in enumerate(examples):
        db = Database.open(ds.db_path(ex.db_id))
        try:
            build_pipeline("zero-shot").run(ex.question, db, llm)  # warm the prompt prefix, untimed
            order = list(pipes) if k % 2 == 0 else list(reversed(pipes))
            for name in order:
                answer = pipes[name].run(ex.question, db, llm)
                gen = next(e for e in answer.trace if e.stage == "generate")
                stats[name]["seconds"].append(sum(e.seconds for e in answer.trace))
                stats[name]["tokens"].append(gen.usage.completion_tokens / max(gen.seconds, 1e-6))
                ok = answer.sql is not None and execution_match(db, ex.gold_sql, answer.sql)[0]
                stats[name]["right"].append(float(ok))
                stats[name]["voted"].append(float(voted(answer)))
            print(f"{k + 1}/{len(examples)} {ex.id}", file=sys.stderr)
        finally:
            db.close()
    first = statistics.median(stats[args.pipelines[0]]["seconds"])
    table = []
    print("| pipeline | questions | EX | median s / q | mean s / q | generation tokens / s (median) | median vs first "
          "| voted | median s / voted q |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, s in stats.items():
        on_votes = [x for x, v in zip(s["seconds"], s["voted"]) if v]
        row = {"pipeline": name, "n": len(s["seconds"]), "ex": round(100 * statistics.mean(s["right"]), 1),
               "median_s": round(statistics.median(s["seconds"]), 2), "mean_s": round(statistics.mean(s["seconds"]), 2),
               "tokens_per_s": round(statistics.median(s["tokens"]), 1),
               "ratio": round(statistics.median(s["seconds"]) / first, 2), "voted": len(on_votes),
               "median_voted_s": round(statistics.median(on_votes), 2) if on_votes else None}
        table.append(row)
        print(f"| `{name}` | {row['n']} | {row['ex']} | {row['median_s']} | {row['mean_s']} | {row['tokens_per_s']} | "
              f"{row['ratio']}x | {row['voted']} | {row['median_voted_s']} |")
    if args.out:
        args.out.write_text(json.dumps({"date": datetime.now(timezone.utc).isoformat(timespec="minutes"),
                                        "machine": platform.processor() or platform.machine(),
                                        "model": args.model, "sample": str(args.sample), "rows": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
