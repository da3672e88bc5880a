"""The few-shot view's prompt evaluated after generation's: its own instructions, or generation's as its prefix.

    .venv/bin/python benchmarks/speed/bench_fewshot_prefix.py --questions 12 --out benchmarks/results/fewshot-prefix.json

A vote of `best` asks the question again with 4 example pairs (the few-shot view), right after generation and the
vote's samples have evaluated the zero-shot prompt. The ``few_shot`` template has its own system message, so
llama.cpp shares nothing with the zero-shot prompt and evaluates the schema again; ``zero_shot_examples`` keeps
generation's system message and schema and puts the pairs after the schema, so only the pairs and the question
are new. The model's prompt-state cache (:mod:`sqlweave.llm.prompt_states`) also keeps each prompt kind's own
prefix, so the difference should show only on the first vote on a database. This measures it: for each
question of the 200-question sample (in order, so a database's questions come together), the zero-shot answer
is generated, then each template's prompt is evaluated (one output token) right after the zero-shot prompt, the
order of the two alternating. Prompt states are kept in memory only (``SQLWEAVE_PROMPT_STATES=0``), as in a
process that has not seen the database before. Prints medians for the first question of each database and for
the others; writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import SPIDER, SAMPLES, machine
TEMPLATES = ("few_shot", "zero_shot_examples")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=12)
    ap.add_argument("--sample", type=Path, default=SAMPLES / "spider-dev-200.json")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    os.environ["SQLWEAVE_PROMPT_STATES"] = "0"  # no state on disk from earlier runs: memory only

    from sqlweave.database import Database
    from sqlweave.eval.datasets import load_spider
    from sqlweave.llm.base import Message
    from sqlweave.llm.local import LocalLLM
    from sqlweave.presets import build_pipeline
    from sqlweave.prompts import render
    from sqlweave.retrieval.pool import load_pool
    from sqlweave.stages.select_examples import default_pool_path, format_examples

    ds = load_spider(SPIDER, "dev")
    by_id = {ex.id: ex for ex in ds.examples}
    examples = [by_id[i] for i in json.loads(args.sample.read_text())["ids"] if i in by_id][: args.questions]
    llm = LocalLLM("1.5b")
    pool = load_pool(default_pool_path())
    seen: set[str] = set()
    rows = []
    for k, ex in enumerate(examples):
        db = Database.open(ds.db_path(ex.db_id))
        try:
            answer = build_pipeline("zero-shot").run(ex.question, db, llm)
        finally:
            db.close()
        generation = next(e for e in answer.trace if e.stage == "generate").calls[0].messages
        schema = generation[1].content.split("Database schema:\n", 1)[1].rsplit("\n\nQuestion:", 1)[0]
        block = format_examples(pool.search("question", ex.question, 4, lambda e, db_id=ex.db_id: e.db_id == db_id))
        seconds: dict[str, float] = {}
        for name in TEMPLATES if k % 2 == 0 else tuple(reversed(TEMPLATES)):
            llm.complete(generation, max_tokens=1)  # the zero-shot prompt evaluated last, as in a vote
            system, user = render(name, dialect="SQLite", schema=schema, examples=block, question=ex.question)
            start = time.perf_counter()
            llm.complete([Message("system", system), Message("user", user)], max_tokens=1)
            seconds[name] = round(time.perf_counter() - start, 3)
        rows.append({"id": ex.id, "db": ex.db_id, "first_on_db": ex.db_id not in seen, **seconds})
        seen.add(ex.db_id)
        print(f"{k + 1}/{len(examples)} {ex.id} {seconds}", file=sys.stderr)
    table = []
    print("| questions | n | " + " | ".join(f"`{t}` median s" for t in TEMPLATES) + " | ratio |")
    print("|---|---|---|---|---|")
    for label, first in (("first on its database", True), ("the others", False)):
        part = [r for r in rows if r["first_on_db"] == first]
        if not part:
            continue
        medians = {t: round(statistics.median(r[t] for r in part), 2) for t in TEMPLATES}
        ratio = round(medians[TEMPLATES[1]] / medians[TEMPLATES[0]], 2)
        table.append({"questions": label, "n": len(part), **medians, "ratio": ratio})
        print(f"| {label} | {len(part)} | " + " | ".join(str(medians[t]) for t in TEMPLATES) + f" | {ratio}x |")
    if args.out:
        args.out.write_text(json.dumps({"date": datetime.now(timezone.utc).isoformat(timespec="minutes"),
                                        "machine": machine(),
                                        "command": " ".join(["python"] + sys.argv), "table": table,
                                        "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
