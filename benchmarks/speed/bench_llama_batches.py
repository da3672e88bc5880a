"""Prompt evaluation speed of the embedded model under llama.cpp's batch settings and flash attention (no answers).

On this CPU a long prompt costs most of a question's time (the schema of a large database: 2 minutes), so the
settings that could evaluate it faster are timed on one prompt: ``n_batch`` (tokens per call into llama.cpp),
``n_ubatch`` (tokens per compute pass) and ``flash_attn``. sqlweave loads the model with ``n_batch=512`` and
llama.cpp's defaults for the rest. Each setting loads the model afresh and evaluates the same tokens (the opening of
Spider's ``tables.json``) from an empty context; the rounds interleave the settings, so the machine's load falls on
all of them alike.

    .venv/bin/python benchmarks/speed/bench_llama_batches.py --tokens 1500 --rounds 3 \
        --out benchmarks/results/llama-batches.json
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import save, SPIDER, parser  # noqa: E402

TEXT = SPIDER / "tables.json"

#: The settings timed; the first is sqlweave's.
SETTINGS: dict[str, dict[str, Any]] = {
    "n_batch 512 (sqlweave's)": {"n_batch": 512},
    "n_batch 512, flash attention": {"n_batch": 512, "flash_attn": True},
    "n_batch 2048, n_ubatch 512": {"n_batch": 2048, "n_ubatch": 512},
    "n_batch 1024, n_ubatch 1024": {"n_batch": 1024, "n_ubatch": 1024},
    "n_batch 1024, n_ubatch 1024, flash attention": {"n_batch": 1024, "n_ubatch": 1024, "flash_attn": True},
}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--model", default="1.5b")
    ap.add_argument("--tokens", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from llama_cpp import Llama
    from rich.console import Console
    from rich.table import Table

    from sqlweave.llm.local import default_threads
    from sqlweave.llm.weights import ensure_weights

    path = ensure_weights(args.model)
    text = TEXT.read_text(encoding="utf-8")
    seconds: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for _ in range(args.rounds):
        for name, options in SETTINGS.items():
            llama = Llama(model_path=str(path), n_ctx=8192, n_threads=default_threads(), verbose=False, **options)
            tokens = llama.tokenize(text.encode("utf-8"))[:args.tokens]
            start = time.perf_counter()
            llama.eval(tokens)
            seconds[name].append(time.perf_counter() - start)
            del llama
    base = statistics.median(seconds[next(iter(SETTINGS))])
    rows = [{"setting": name, "seconds": [round(s, 2) for s in got], "median_s": round(statistics.median(got), 2),
             "tokens_per_s": round(args.tokens / statistics.median(got), 1),
             "vs_sqlweave": round(base / statistics.median(got), 3)} for name, got in seconds.items()]
    table = Table(title=f"{args.tokens} prompt tokens evaluated from an empty context, model {args.model}, "
                        f"{args.rounds} rounds")
    for col in ("setting", "median s", "tokens / s", "speed vs sqlweave's", "all runs (s)"):
        table.add_column(col, justify="left" if col == "setting" else "right")
    for r in rows:
        table.add_row(r["setting"], f"{r['median_s']:.2f}", f"{r['tokens_per_s']:.1f}", f"{r['vs_sqlweave']:.2f}",
                      ", ".join(f"{s:.1f}" for s in r["seconds"]))
    Console(width=160).print(table)
    save(args.out, {"model": args.model, "tokens": args.tokens, "rounds": args.rounds, "rows": rows})


if __name__ == "__main__":
    main()
