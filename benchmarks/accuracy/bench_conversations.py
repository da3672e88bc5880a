"""Follow-up questions: do the earlier turns help? The conversation set answered three ways.

    .venv/bin/python benchmarks/accuracy/bench_conversations.py --out .eval-runs/conv [--model local:1.5b] [--pipeline default]

Every conversation of ``benchmarks/data/conversations-spider.json`` (Spider dev databases, 2-4 turns each, gold
SQL per turn) is answered

- ``alone``: each turn on its own, no history (the baseline);
- ``context``: as a :class:`~sqlweave.conversation.Conversation` without rewriting: each prompt shows the earlier
  questions and their SQL (the ``history`` block of the generation prompt);
- ``rewrite``: as a :class:`~sqlweave.conversation.Conversation` with its default rewriting: the model first restates
  a follow-up as a standalone question, which the pipeline answers with the earlier turns in its prompt;
- ``http``: through the HTTP door (``POST /api/ask`` with the conversation's id, the app served in-process), which
  runs the same restating stage: it should score what ``rewrite`` scores (its prompts are the same, so its model
  answers come from the response cache after a ``rewrite`` run).

Each turn is scored with the Spider execution match (:func:`sqlweave.eval.runner.execution_match`) against its gold
SQL. Reported per mode: question match (all turns), interaction match (every turn of a conversation right), match by
turn position (1, 2, 3, 4), cost per turn, and how often ``builds_on`` was set. Results go to ``--results`` (JSON,
with the turns each mode got right or wrong against ``alone``); each scored turn is appended to
``OUT/results-MODES.jsonl`` as it finishes, so a rerun with the same ``--out`` continues where it stopped, and runs of
different ``--modes`` may share the folder (the summary reads them all). Model answers come from the response cache
when the same prompt was seen before (turn 1 is the same prompt in every mode).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, SPIDER, RESULTS, write_json, parser
DATA = ROOT / "benchmarks" / "data" / "conversations-spider.json"
MODES = ("alone", "context", "rewrite", "http")


def load_conversations(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


def read_checkpoint(folder: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Scored turns already in the folder's ``results*.jsonl`` files (a torn last line is dropped)."""
    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    for path in sorted(folder.glob("results*.jsonl")):
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


def flips(rows: list[dict[str, Any]], mode: str, baseline: str = "alone") -> dict[str, list[str]]:
    """Turns (``conversation#turn``) that ``mode`` got right and the baseline wrong, and the reverse."""
    by = {(r["mode"], r["conversation"], r["turn"]): r["match"] for r in rows}
    keys = sorted({(c, t) for (_, c, t) in by})
    both = [(c, t) for c, t in keys if (baseline, c, t) in by and (mode, c, t) in by]
    return {
        "wrong_to_right": [f"{c}#{t}" for c, t in both if by[(mode, c, t)] and not by[(baseline, c, t)]],
        "right_to_wrong": [f"{c}#{t}" for c, t in both if by[(baseline, c, t)] and not by[(mode, c, t)]],
    }


class HttpDoor:
    """One conversation asked through the HTTP app (in-process), with the answers shaped like an engine's."""

    def __init__(self, db_id: str, engine: Any, llm: Any, args: argparse.Namespace) -> None:
        import tempfile

        from fastapi.testclient import TestClient

        from dataclasses import replace

        from sqlweave.catalog import Catalog, DatabaseEntry
        from sqlweave.presets import build_pipeline
        from sqlweave.server import ServerSettings, create_app

        folder = Path(tempfile.mkdtemp(prefix="sqlweave-conv-http-"))
        settings = ServerSettings(Catalog({db_id: DatabaseEntry(db_id, str(engine.db.target))}), llm=llm,
                                  preset=args.pipeline, api_key="", rate_limit_per_minute=0, warm_up=False,
                                  history_turns=args.max_history, max_question_seconds=float("inf"),
                                  conversation_url=f"sqlite:///{folder / 'conversations.sqlite'}",
                                  feedback_log=folder / "feedback.jsonl", answer_key=folder / "key")
        app = create_app(settings, llm=llm)
        # Answers are measured, not the time budget (on a shared machine a budget would cut some): the preset runs
        # in full, as the other modes' do.
        app.state.sqlweave._pipelines[args.pipeline] = replace(build_pipeline(args.pipeline), budget_s=float("inf"))
        self.client = TestClient(app, base_url="http://127.0.0.1")
        self.db_id = db_id
        self.conversation_id: str | None = None

    def run(self, question: str) -> Any:
        from types import SimpleNamespace

        from sqlweave.llm.base import Usage

        body: dict[str, Any] = {"database": self.db_id, "question": question}
        if self.conversation_id:
            body["conversation_id"] = self.conversation_id
        else:
            body["new_conversation"] = True
        a = self.client.post("/api/ask", json=body).json()
        self.conversation_id = a.get("conversation_id") or self.conversation_id
        error = a.get("error") or (a if "answer_id" not in a else None)
        tokens = [(e.get("prompt_tokens", 0), e.get("completion_tokens", 0)) for e in a.get("trace", [])]
        seconds = sum(e.get("seconds", 0) for e in a.get("trace", []))
        return SimpleNamespace(
            sql=a.get("sql"), result=SimpleNamespace() if a.get("sql") and not a.get("error") else None,
            error=None if not error else SimpleNamespace(code=(error.get("error") or error).get("code")),
            builds_on=a.get("builds_on"), model_calls=(a.get("timings") or {}).get("model_calls", 0),
            usage=Usage(sum(p for p, _ in tokens), sum(c for _, c in tokens)), seconds=seconds,
            cost_seconds=seconds, restated=a.get("restated"))


def print_table(summary: dict[str, dict[str, Any]], positions: list[int]) -> None:
    from rich.console import Console
    from rich.table import Table

    def fmt(v: Any) -> str:
        return "-" if v is None else (f"{v:.1f}" if isinstance(v, float) else str(v))

    modes = [m for m in MODES if m in summary]
    table = Table(title="Follow-up questions: execution match (%) of each turn alone, with the earlier turns in the "
                        "prompt (context), and restated first (rewrite)")
    table.add_column("metric")
    for m in modes:
        table.add_column(m, justify="right")

    def row(label: str, get: Any) -> None:
        table.add_row(label, *(fmt(get(summary[m])) for m in modes))

    row("question match", lambda s: s.get("question_match"))
    row("interaction match", lambda s: s.get("interaction_match"))
    row("turns ≥ 2", lambda s: s.get("later_turn_match"))
    for p in positions:
        n = max((s.get("by_position", {}).get(str(p), {}).get("turns", 0) for s in summary.values()), default=0)
        row(f"turn {p} (n={n})", lambda s, p=p: s.get("by_position", {}).get(str(p), {}).get("match"))
    row("executed", lambda s: s.get("executed"))
    row("model calls / turn", lambda s: s.get("model_calls_per_turn"))
    row("prompt tokens / turn", lambda s: s.get("prompt_tokens_per_turn"))
    row("seconds / turn", lambda s: s.get("cost_seconds_per_turn"))
    row("builds_on set, turns ≥ 2", lambda s: s.get("builds_on_set_later_turns"))
    row("builds_on set, turn 1", lambda s: s.get("builds_on_set_turn_1"))
    table.add_row("conversations / turns scored", *(f"{summary[m]['conversations']} / {summary[m]['turns']}"
                                                     for m in modes))
    Console().print(table)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--model", default="local:1.5b", help="model spec (local:1.5b, local:0.5b, openai:MODEL, ...)")
    ap.add_argument("--pipeline", default="default")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--spider-dir", type=Path, default=SPIDER)
    ap.add_argument("--out", type=Path, default=Path(".eval-runs/conv"), help="checkpoint folder (resumable)")
    ap.add_argument("--results", type=Path, default=RESULTS / "conversations.json")
    ap.add_argument("--modes", default="alone,context,rewrite", help="comma-separated: alone, context, rewrite, http")
    ap.add_argument("--max-history", type=int, default=4)
    ap.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    ap.add_argument("--no-cache", action="store_true", help="always call the model")
    ap.add_argument("--threads", type=int, default=None,
                    help="CPU threads of the embedded model (default: its own choice; 1 when other jobs share the CPU)")
    ap.add_argument("--summary-only", action="store_true", help="print and write the summary of the checkpoint")
    args = ap.parse_args()

    from sqlweave.conversation import Conversation, ConversationStore
    from sqlweave.database import Database
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
    # One checkpoint file per mode: runs of different modes may share the folder, even at the same time.
    checkpoint = args.out / f"results-{'-'.join(modes)}.jsonl"
    done = {k: v for k, v in read_checkpoint(args.out).items() if k[0] in modes}
    total = sum(len(c["turns"]) for c in conversations) * len(modes)
    print(f"{len(conversations)} conversations, {total} turns to score ({len(done)} already in {args.out})",
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
                    chat = Conversation(engine, store, database=db_id, max_history=args.max_history,
                                        rewrite=mode == "rewrite") if mode in ("context", "rewrite") else None
                    door = HttpDoor(db_id, engine, llm, args) if mode == "http" else None
                    for i, turn in enumerate(conv["turns"], 1):
                        if chat is None and door is None and (mode, conv["id"], i) in done:
                            continue
                        answer = (chat.run(turn["question"]) if chat is not None
                                  else door.run(turn["question"]) if door is not None
                                  else engine.run(turn["question"]))
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
                            "restated": getattr(answer, "restated", None),
                        }
                        sink.write(json.dumps(row) + "\n")
                        sink.flush()
                        os.fsync(sink.fileno())
                        done[(mode, conv["id"], i)] = row
                        print(f"[{len(done)}/{total} {time.perf_counter() - started:.0f}s] {mode:7} {conv['id']}#{i} "
                              f"{'ok ' if match else 'MISS'} {answer.sql}", flush=True)
        for engine in engines.values():
            engine.close()

    rows = list(read_checkpoint(args.out).values())
    ids = {c["id"] for c in conversations}
    rows = [r for r in rows if r["conversation"] in ids]
    # Modes are compared on the same conversations: those every summarised mode has scored to the last turn.
    present = [m for m in modes if any(r["mode"] == m for r in rows)]
    keys = {(r["mode"], r["conversation"], r["turn"]) for r in rows}
    common = [c for c in conversations
              if all((m, c["id"], i) in keys for m in present for i in range(1, len(c["turns"]) + 1))]
    common_ids = {c["id"] for c in common}
    rows = [r for r in rows if r["conversation"] in common_ids]
    summary = {m: summarize([r for r in rows if r["mode"] == m], common) for m in present}
    positions = sorted({i for c in conversations for i in range(1, len(c["turns"]) + 1)})
    print_table(summary, positions)
    result = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, {os.cpu_count()} cores",
        "command": " ".join([Path(sys.argv[0]).as_posix()] + sys.argv[1:]),
        "model": args.model, "pipeline": args.pipeline, "max_history": args.max_history,
        "data": os.path.relpath(args.data, ROOT) if args.data.is_absolute() else str(args.data),
        "conversations": len(conversations), "turns": sum(len(c["turns"]) for c in conversations),
        "modes": summary, "flips_against_alone": {m: flips(rows, m) for m in modes if m != "alone"},
    }
    write_json(args.results, result)
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
