"""Seconds of a vote's samples drawn one after another against decoded together, on the votes of a recorded run.

    .venv/bin/python benchmarks/speed/bench_parallel_votes.py benchmarks/checkpoints/default-200 --limit 20 \
        --out benchmarks/results/parallel-votes.json

Takes every sampled call (``n`` > 1, temperature > 0) a recorded run's traces hold (``default``'s vote on unsure
answers: 4 samples of the generation prompt at temperature 0.8, 200 tokens at most), and asks it of the embedded
1.5B model twice in one process: once drawing the samples one after another (``parallel_samples=False``), once
decoding them together as parallel sequences over the prompt's state (:mod:`sqlweave.llm.parallel`). Each prompt
is evaluated by both models before either is timed (in a vote it was evaluated by generation just before), and
the order of the two alternates from call to call. Prints the median and mean seconds of each way, their ratio
per call, the tokens written, and how many samples came out the same text; writes it all as JSON. No response
cache: every call is drawn.
"""

from __future__ import annotations

import argparse
import json
import sys
import platform
import statistics
import subprocess
import time
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md

from benchmarks.common import traces  # noqa: E402
from sqlweave.llm.base import GenerationOptions, Message


def sampled_calls(folder: Path, limit: int | None) -> list[tuple[str, list[Message], GenerationOptions]]:
    found = []
    for record in traces(folder):
        for entry in record["trace"]:
            for call in entry.get("calls") or []:
                options = call.get("options") or {}
                if options.get("n", 1) > 1 and options.get("temperature"):
                    messages = [Message(m["role"], m["content"]) for m in call["messages"]]
                    found.append((record["id"], messages, GenerationOptions(**options)))
        if limit is not None and len(found) >= limit:
            return found[:limit]
    return found


def machine() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        name = next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), "")
    except OSError:
        name = ""
    return f"{name or platform.processor()}, {__import__('os').cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a recorded run folder or checkpoint")
    parser.add_argument("--limit", type=int, default=None, help="the first N sampled calls")
    parser.add_argument("--model", default="1.5b")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from sqlweave.llm.local import LocalLLM

    calls = sampled_calls(args.run, args.limit)
    ways = {"one after another": LocalLLM(args.model, parallel_samples=False),
            "together": LocalLLM(args.model, parallel_samples=True)}
    rows: list[dict[str, Any]] = []
    for i, (qid, messages, options) in enumerate(calls):
        for llm in ways.values():
            llm.prefill(messages)
        order = list(ways) if i % 2 == 0 else list(reversed(ways))
        row: dict[str, Any] = {"id": qid, "n": options.n, "max_tokens": options.max_tokens}
        texts: dict[str, tuple[str, ...]] = {}
        for name in order:
            start = time.perf_counter()
            out = ways[name].complete(messages, options)
            row[f"{name} s"] = time.perf_counter() - start
            row[f"{name} tokens"] = out.usage.completion_tokens
            texts[name] = out.texts
        row["same texts"] = sum(a == b for a, b in zip(texts["one after another"], texts["together"]))
        row["ratio"] = row["together s"] / row["one after another s"]
        rows.append(row)
        print(f"{i + 1}/{len(calls)} {qid}: {row['one after another s']:.2f} s for "
              f"{row['one after another tokens']} tokens -> {row['together s']:.2f} s for {row['together tokens']} "
              f"tokens ({row['ratio']:.2f}), {row['same texts']}/{options.n} same", flush=True)

    def stat(key: str, f: Any) -> float:
        return float(f([r[key] for r in rows])) if rows else 0.0

    summary = {
        "command": "benchmarks/speed/bench_parallel_votes.py " + " ".join(
            [str(args.run)] + ([f"--limit {args.limit}"] if args.limit else [])),
        "date": date.today().isoformat(), "machine": machine(), "calls": len(rows),
        "median s one after another": stat("one after another s", statistics.median),
        "median s together": stat("together s", statistics.median),
        "mean s one after another": stat("one after another s", statistics.mean),
        "mean s together": stat("together s", statistics.mean),
        "median ratio": stat("ratio", statistics.median),
        "tokens per s one after another": stat("one after another tokens", sum) / max(1e-9, stat(
            "one after another s", sum)),
        "tokens per s together": stat("together tokens", sum) / max(1e-9, stat("together s", sum)),
        "tokens one after another": stat("one after another tokens", sum),
        "tokens together": stat("together tokens", sum),
        "samples the same": sum(r["same texts"] for r in rows), "samples": sum(r["n"] for r in rows),
    }
    print()
    print(f"{'way':<20} {'median s':>9} {'mean s':>8} {'tokens':>8}")
    for name in ways:
        print(f"{name:<20} {summary[f'median s {name}']:>9.2f} {summary[f'mean s {name}']:>8.2f} "
              f"{summary[f'tokens {name}']:>8.0f}")
    print(f"tokens per second: {summary['tokens per s one after another']:.1f} one after another, "
          f"{summary['tokens per s together']:.1f} together")
    print(f"median ratio together / one after another: {summary['median ratio']:.2f}; "
          f"{summary['samples the same']} of {summary['samples']} samples the same text")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"summary": summary, "calls": rows}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
