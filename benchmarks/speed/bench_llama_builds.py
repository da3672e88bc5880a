"""llama.cpp builds compared on this machine: prompt and generation tokens/s of the embedded 1.5B model.

    .venv/bin/python benchmarks/speed/bench_llama_builds.py --build installed \\
        --build native=/tmp/llama-builds/native-site --build baseline=/tmp/llama-builds/baseline-site

Each ``--build NAME=DIR`` is a ``pip install --target DIR`` of a llama-cpp-python wheel (``installed`` alone is the
one in this environment, built by ``scripts/install.sh``). Every measurement runs in a fresh process with that
build first on the path; the builds take turns round by round (A, B, C, A, B, C, ...) so a noisy neighbour
weighs on all of them alike. Per round: a ~600-token prompt evaluated from scratch, then 128 generated tokens
(llama.cpp's own counters), and the seconds of the zero-shot pipeline on a few fixed Spider dev questions
(response and prompt-state caches off). Prints a table of medians and the ratio to the first build; writes
``benchmarks/results/llama_builds.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, SPIDER, RESULTS
QUESTIONS = ("dev-0", "dev-100", "dev-300", "dev-500", "dev-700")


def measure_once(n_questions: int) -> dict:
    import llama_cpp

    import sqlweave
    from sqlweave.eval.datasets import load_spider
    from sqlweave.llm.base import Message
    from sqlweave.llm.local import LocalLLM, load_llama

    t0 = time.perf_counter()
    llm = LocalLLM("1.5b", state_cache_mb=0)
    llama = load_llama(llm.key, llm.n_ctx, llm.n_threads, state_cache_mb=0)
    load_s = time.perf_counter() - t0
    text = "\n".join(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, name TEXT, value REAL, created TEXT);"
                     for i in range(30))
    llama.reset()
    llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
    llm.complete([Message("user", text + "\nWrite a long SQL tutorial about these tables.")], max_tokens=128,
                 temperature=0.8, seed=1)
    perf = llama_cpp.llama_perf_context(llama._ctx.ctx)
    ds = load_spider(SPIDER, "dev")
    by_id = {e.id: e for e in ds.examples}
    seconds, sqls = [], []
    for qid in QUESTIONS[:n_questions]:
        ex = by_id[qid]
        answer = sqlweave.connect(ds.db_path(ex.db_id), llm=llm, cache=False, pipeline="zero-shot").run(ex.question)
        seconds.append(answer.seconds)
        sqls.append(answer.sql)
    return {"load_s": round(load_s, 2), "prompt_tok_per_s": round(perf.n_p_eval / (perf.t_p_eval_ms / 1000), 1),
            "gen_tok_per_s": round(perf.n_eval / (perf.t_eval_ms / 1000), 1), "seconds": seconds, "sql": sqls,
            "system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
            "llama_cpp": str(Path(llama_cpp.__file__).parent)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", default=[], help="NAME=DIR, or 'installed'")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--questions", type=int, default=len(QUESTIONS))
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=RESULTS / "llama_builds.json")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure_once(args.questions)))
        return
    builds = {}
    for spec in args.build or ["installed"]:
        name, _, folder = spec.partition("=")
        builds[name] = folder or None
    runs: dict[str, list[dict]] = {name: [] for name in builds}
    for r in range(args.rounds):
        for name, folder in builds.items():
            env = dict(os.environ, SQLWEAVE_PROMPT_STATES="0")
            if folder:
                env["PYTHONPATH"] = os.pathsep.join([folder, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
            out = subprocess.run([sys.executable, __file__, "--one", "--questions", str(args.questions)],
                                 capture_output=True, text=True, env=env, cwd=ROOT)
            if out.returncode != 0:
                raise SystemExit(f"build {name!r} failed:\n{out.stderr[-2000:]}")
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1}/{args.rounds} {name}: {runs[name][-1]['prompt_tok_per_s']} prompt tok/s, "
                  f"{runs[name][-1]['gen_tok_per_s']} gen tok/s", file=sys.stderr)
    rows = []
    for name, rs in runs.items():
        per_q = [s for run in rs for s in run["seconds"]]
        rows.append({"build": name, "prompt_tok_per_s": statistics.median(r["prompt_tok_per_s"] for r in rs),
                     "gen_tok_per_s": statistics.median(r["gen_tok_per_s"] for r in rs),
                     "median_s_per_question": round(statistics.median(per_q), 2),
                     "load_s": statistics.median(r["load_s"] for r in rs),
                     "same_sql_as_first": rs[0]["sql"] == runs[next(iter(runs))][0]["sql"],
                     "system_info": rs[0]["system_info"], "llama_cpp": rs[0]["llama_cpp"]})
    first = rows[0]
    print("| build | prompt tok/s | gen tok/s | median s / question | vs " + first["build"] + " (prompt / gen / s) "
          "| same SQL | CPU features used |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        feats = " ".join(p.split(" = ")[0].split(":")[-1].strip() for p in row["system_info"].split("|")
                         if p.strip().endswith("= 1"))
        print(f"| {row['build']} | {row['prompt_tok_per_s']} | {row['gen_tok_per_s']} | {row['median_s_per_question']} "
              f"| {row['prompt_tok_per_s'] / first['prompt_tok_per_s']:.2f} / "
              f"{row['gen_tok_per_s'] / first['gen_tok_per_s']:.2f} / "
              f"{row['median_s_per_question'] / first['median_s_per_question']:.2f} | {row['same_sql_as_first']} "
              f"| {feats} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, "
                                    f"{os.cpu_count()} cores", "command": " ".join(sys.argv), "rows": rows,
                                    "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
