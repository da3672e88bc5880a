"""Follow-up questions: does showing the earlier turns help? The conversation set, with and without context.

    .venv/bin/python benchmarks/bench_conversations.py --out .eval-runs/conv [--model local:1.5b] [--pipeline default]

Every conversation of ``benchmarks/data/conversations-spider.json`` (Spider dev databases, 2-4 turns each, gold
SQL per turn) is answered twice: as a :class:`~sqlweave.conversation.Conversation` (each prompt shows the earlier
questions and their SQL: ``context``) and turn by turn with no history (``alone``, the baseline). Each turn is
scored with the Spider execution match (:func:`sqlweave.eval.runner.execution_match`) against its gold SQL.

Reported per mode: question match (all turns), interaction match (every turn of a conversation right), and match
by turn position (1, 2, 3, 4); the context run also counts how often ``builds_on`` was set from turn 2 on.
Results go to ``--results`` (JSON); each scored turn is appended to ``OUT/results.jsonl`` as it finishes, so a
rerun with the same ``--out`` continues where it stopped. Model answers come from the response cache when the same
prompt was seen before (turn 1 is the same prompt in both modes, so the baseline reuses it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "conversations-spider.json"
SPIDER = ROOT.parent / "shared" / "data" / "spider"
MODES = ("alone", "context")


def load_conversations(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


def read_checkpoint(path: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Scored turns already in ``results.jsonl`` (a torn last line is dropped)."""
    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        done[(r["mode"], r["conversation"], r["turn"])] = r
    return done


def summarize(rows: list[dict[str, Any]], conversations: list[dict[str, Any]]) -> dict[str, Any]:
    """Question match, interaction match and match per turn position for one mode's rows."""
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_conv[r["conversation"]].append(r)
    complete = [c["id"] for c in conversations if len(by_conv.get(c["id"], ())) == len(c["turns"])]
    scored = [r for cid in complete for r in by_conv[cid]]
    n = len(scored)
    pos: dict[int, list[bool]] = defaultdict(list)
    for r in scored:
        pos[r["turn"]].append(r["match"])
    later = [r for r in scored if r["turn"] >= 2]
    out: dict[str, Any] = {
        "conversations": len(complete),
        "turns": n,
        "question_match": _pct(sum(r["match"] for r in scored), n),
        "question_correct": sum(r["match"] for r in scored),
        "interaction_match": _pct(sum(all(r["match"] for r in by_conv[c]) for c in complete), len(complete)),
        "interaction_correct": sum(all(r["match"] for r in by_conv[c]) for c in complete),
        "later_turn_match": _pct(sum(r["match"] for r in later), len(later)),
        "by_position": {str(p): {"turns": len(v), "correct": sum(v), "match": _pct(sum(v), len(v))}
                        for p, v in sorted(pos.items())},
        "executed": _pct(sum(r["executed"] for r in scored), n),
        "model_calls_per_turn": round(sum(r["model_calls"] for r in scored) / n, 2) if n else None,
        "prompt_tokens_per_turn": round(sum(r["prompt_tokens"] for r in scored) / n, 1) if n else None,
        "cost_seconds_per_turn": round(sum(r["cost_seconds"] for r in scored) / n, 2) if n else None,
    }
    if later and any(r.get("builds_on") is not None for r in scored):
        out["builds_on_set_later_turns"] = _pct(sum(r.get("builds_on") is not None for r in later), len(later))
        out["builds_on_set_turn_1"] = _pct(sum(r.get("builds_on") is not None for r in scored if r["turn"] == 1),
                                           len(pos.get(1, [])))
    return out


def _pct(k: int, n: int) -> float | None:
    return round(100.0 * k / n, 1) if n else None


def flips(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Turns (``conversation#turn``) the context run got right and the baseline wrong, and the reverse."""
    by = {(r["mode"], r["conversation"], r["turn"]): r["match"] for r in rows}
    keys = sorted({(c, t) for (_, c, t) in by})
    both = [(c, t) for c, t in keys if ("alone", c, t) in by and ("context", c, t) in by]
    return {
        "wrong_to_right": [f"{c}#{t}" for c, t in both if by[("context", c, t)] and not by[("alone", c, t)]],
        "right_to_wrong": [f"{c}#{t}" for c, t in both if by[("alone", c, t)] and not by[("context", c, t)]],
    }


def print_table(summary: dict[str, dict[str, Any]], positions: list[int]) -> None:
    from rich.console import Console
    from rich.table import Table

    def fmt(v: Any) -> str:
        return "-" if v is None else (f"{v:.1f}" if isinstance(v, float) else str(v))

    def delta(a: Any, b: Any) -> str:
        return "-" if a is None or b is None else f"{b - a:+.1f}"

    alone, ctx = summary.get("alone", {}), summary.get("context", {})
    table = Table(title="Follow-up questions: each turn alone vs. with the earlier turns (execution match, %)")
    table.add_column("metric")
    table.add_column("alone", justify="right")
    table.add_column("context", justify="right")
    table.add_column("Δ", justify="right")
    rows = [("question match", "question_match"), ("interaction match", "interaction_match"),
            ("turns ≥ 2", "later_turn_match")]
    for label, key in rows:
        table.add_row(label, fmt(alone.get(key)), fmt(ctx.get(key)), delta(alone.get(key), ctx.get(key)))
    for p in positions:
        a = alone.get("by_position", {}).get(str(p), {})
        c = ctx.get("by_position", {}).get(str(p), {})
        table.add_row(f"turn {p} (n={c.get('turns', a.get('turns', 0))})", fmt(a.get("match")), fmt(c.get("match")),
                      delta(a.get("match"), c.get("match")))
    for label, key in [("executed", "executed"), ("model calls / turn", "model_calls_per_turn"),
                       ("prompt tokens / turn", "prompt_tokens_per_turn"), ("seconds / turn", "cost_seconds_per_turn")]:
        table.add_row(label, fmt(alone.get(key)), fmt(ctx.get(key)), "")
    if "builds_on_set_later_turns" in ctx:
        table.add_row("builds_on set, turns ≥ 2", "", fmt(ctx["builds_on_set_later_turns"]), "")
        table.add_row("builds_on set, turn 1", "", fmt(ctx["builds_on_set_turn_1"]), "")
    Console().print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="local:1.5b", help="model spec (local:1.5b, local:0.5b, openai:MODEL, ...)")
    ap.add_argument("--pipeline", default="default")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--spider-dir", type=Path, default=SPIDER)
    ap.add_argument("--out", type=Path, default=Path(".eval-runs/conv"), help="checkpoint folder (resumable)")
    ap.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results" / "conversations.json")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: alone, context")
    ap.add_argument("--max-history", type=int, default=4)
    ap.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    ap.add_argument("--no-cache", action="store_true", help="always call the model")
    ap.add_argument("--threads", type=int, default=None,
                    help="CPU threads of the embedded model (default: its own choice; 1 when other jobs share the CPU)")
    ap.add_argument("--summary-only", action="store_true", help="print and write the summary of the checkpoint")
    args = ap.parse_args()

    from sqlweave.conversation import Conversation, ConversationStore
    from sqlweave.db import Database
    from sqlweave.engine import Engine
    from sqlweave.presets import build_pipeline
    from sqlweave.eval.runner import GoldCache, execution_match
    from sqlweave.llm.registry import get_llm

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - set(MODES)
    if unknown:
        ap.error(f"unknown mode(s): {', '.join(sorted(unknown))}")
    conversations = load_conversations(args.data)[: args.limit]
    args.out.mkdir(parents=True, exist_ok=True)
    checkpoint = args.out / "results.jsonl"
    done = read_checkpoint(checkpoint)
    total = sum(len(c["turns"]) for c in conversations) * len(modes)
    print(f"{len(conversations)} conversations, {total} turns to score ({len(done)} already in {checkpoint})",
          flush=True)

    if not args.summary_only:
        options = {"n_threads": args.threads} if args.threads and args.model.startswith("local") else {}
        llm = get_llm(args.model, cache=not args.no_cache, **options)
        pipeline = build_pipeline(args.pipeline)
        store = ConversationStore(args.out / "conversations.sqlite")
        engines: dict[str, Any] = {}
        gold_cache = GoldCache()
        started = time.perf_counter()
        with checkpoint.open("a", encoding="utf-8") as sink:
            for conv in sorted(conversations, key=lambda c: c["db_id"]):  # one schema prefix at a time
                db_id = conv["db_id"]
                if db_id not in engines:
                    engines[db_id] = Engine(Database.open(args.spider_dir / "database" / db_id / f"{db_id}.sqlite"),
                                            llm, pipeline)
                engine = engines[db_id]
                for mode in modes:
                    keys = [(mode, conv["id"], i) for i in range(1, len(conv["turns"]) + 1)]
                    if all(k in done for k in keys):
                        continue
                    # A conversation interrupted midway is replayed from turn 1 (cached answers cost nothing) so that
                    # later turns see the same history; only turns not yet in the checkpoint are written.
                    chat = Conversation(engine, store, database=db_id, max_history=args.max_history) \
                        if mode == "context" else None
                    for i, turn in enumerate(conv["turns"], 1):
                        if chat is None and (mode, conv["id"], i) in done:
                            continue
                        answer = chat.run(turn["question"]) if chat is not None else engine.run(turn["question"])
                        if (mode, conv["id"], i) in done:
                            continue
                        match, error = False, None if answer.error is None else answer.error.code
                        if answer.sql is not None and answer.result is not None:
                            match, err = execution_match(engine.db, turn["sql"], answer.sql, gold_cache)
                            error = error or err
                        row = {
                            "mode": mode, "conversation": conv["id"], "db_id": db_id, "turn": i,
                            "question": turn["question"], "gold": turn["sql"], "prediction": answer.sql,
                            "match": bool(match), "executed": answer.result is not None, "error": error,
                            "builds_on": answer.builds_on, "model_calls": answer.model_calls,
                            "prompt_tokens": answer.usage.prompt_tokens,
                            "completion_tokens": answer.usage.completion_tokens,
                            "seconds": round(answer.seconds, 3), "cost_seconds": round(answer.cost_seconds, 3),
                            "store_id": None if chat is None else chat.id,
                        }
                        sink.write(json.dumps(row) + "\n")
                        sink.flush()
                        os.fsync(sink.fileno())
                        done[(mode, conv["id"], i)] = row
                        print(f"[{len(done)}/{total} {time.perf_counter() - started:.0f}s] {mode:7} {conv['id']}#{i} "
                              f"{'ok ' if match else 'MISS'} {answer.sql}", flush=True)
        for engine in engines.values():
            engine.close()

    rows = list(read_checkpoint(checkpoint).values())
    ids = {c["id"] for c in conversations}
    rows = [r for r in rows if r["conversation"] in ids]
    summary = {m: summarize([r for r in rows if r["mode"] == m], conversations) for m in modes}
    positions = sorted({i for c in conversations for i in range(1, len(c["turns"]) + 1)})
    print_table(summary, positions)
    result = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, {os.cpu_count()} cores",
        "command": " ".join([Path(sys.argv[0]).as_posix()] + sys.argv[1:]),
        "model": args.model, "pipeline": args.pipeline, "max_history": args.max_history,
        "data": os.path.relpath(args.data, ROOT) if args.data.is_absolute() else str(args.data),
        "conversations": len(conversations), "turns": sum(len(c["turns"]) for c in conversations),
        "modes": summary, "flips": flips(rows),
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
