"""Reports of evaluation runs: a Markdown table, and a self-contained HTML page with plots.

The HTML page embeds its charts as inline SVG (no scripts, no external files), so it
can be mailed or attached as is.

>>> from sqlweave.eval.runner import Summary
>>> s = Summary(2, 50.0, 50.0, 100.0, {"easy": (2, 50.0)}, 1.0, 100, 10, 1.0)
>>> "| easy | 2 | 50.0 |" in markdown_table([("zero-shot", s)])
True
"""

from __future__ import annotations

import html
import statistics
from typing import Sequence

from .exact_match import OFFICIAL as EXACT_OFFICIAL
from .hardness import LEVELS
from .metrics import BIRD_EXEC_OFFICIAL, SPIDER_EXEC_OFFICIAL
from .runner import QuestionResult, Summary, cost, summarize

#: Which official script (repository @ commit, files) each metric reproduces, question by question.
OFFICIAL_SCRIPTS: dict[str, str] = {
    "EX (Spider; DISTINCT removed or kept)": SPIDER_EXEC_OFFICIAL + " (eval_exec_match)",
    "exact match (Spider)": EXACT_OFFICIAL + " (eval_exact_match)",
    "hardness (Spider)": EXACT_OFFICIAL + " (eval_hardness)",
    "test-suite (Spider)": SPIDER_EXEC_OFFICIAL + " (eval_exec_match over the suite's databases)",
    "EX (BIRD)": BIRD_EXEC_OFFICIAL + " (execute_sql)",
    "VES (BIRD)": BIRD_EXEC_OFFICIAL.replace("evaluation.py", "evaluation_ves.py") + " (iterated_execute_sql)",
}


def provenance(rule: str | None = None) -> str:
    """Lines naming the official script and version each metric reproduces (``rule``: ``spider``, ``bird`` or both).

    >>> "taoyds/test-suite-sql-eval@e97acc5" in provenance("spider")
    True
    """
    keep = [(m, src) for m, src in OFFICIAL_SCRIPTS.items()
            if rule is None or ("BIRD" in m) == (rule == "bird")]
    return "\n".join(f"- {m}: {src}" for m, src in keep) + "\n"


def summary_caption(summary: Summary) -> str:
    """One paragraph under a run's EX table: the other metrics and what a question cost."""
    extra = ""
    if summary.exact_match is not None:
        extra += f", exact match {summary.exact_match:.1f}%"
    if summary.test_suite is not None:
        extra += f", test-suite {summary.test_suite:.1f}% ({summary.ts_n})"
    return (f"EX with DISTINCT kept {summary.ex_keep_distinct:.1f}%{extra}, executable {summary.executable:.1f}%; "
            f"per question: median {summary.median_cost_seconds:.2f} s of model and database time (cached answers "
            f"at what they first cost; {summary.median_seconds:.2f} s this run), "
            f"{summary.median_prompt_tokens:.0f} prompt + "
            f"{summary.median_completion_tokens:.0f} output tokens, {summary.mean_model_calls:.2f} model calls")


def _levels(summaries: Sequence[Summary]) -> list[str]:
    seen = [lv for lv in LEVELS if any(lv in s.by_level for s in summaries)]
    return seen + sorted({lv for s in summaries for lv in s.by_level} - set(seen))


def markdown_table(runs: Sequence[tuple[str, Summary]]) -> str:
    """One column per run: EX by hardness, then the other metrics and costs."""
    summaries = [s for _, s in runs]
    head = "| | n | " + " | ".join(name for name, _ in runs) + " |"
    lines = [head, "|" + "---|" * (len(runs) + 2)]
    for lv in _levels(summaries):
        n = next(s.by_level[lv][0] for s in summaries if lv in s.by_level)
        cells = [f"{s.by_level[lv][1]:.1f}" if lv in s.by_level else "-" for s in summaries]
        lines.append(f"| {lv} | {n} | " + " | ".join(cells) + " |")
    rows = [
        ("**EX (all)**", lambda s: f"**{s.ex:.1f}**"),
        ("EX, DISTINCT kept", lambda s: f"{s.ex_keep_distinct:.1f}"),
        ("exact match", lambda s: "-" if s.exact_match is None else f"{s.exact_match:.1f}"),
        ("test-suite", lambda s: "-" if s.test_suite is None else f"{s.test_suite:.1f} ({s.ts_n})"),
        ("executable %", lambda s: f"{s.executable:.1f}"),
        ("median s / question", lambda s: f"{s.median_cost_seconds:.2f}"),  # cached answers at their first cost
        ("median prompt tokens", lambda s: f"{s.median_prompt_tokens:.0f}"),
        ("median output tokens", lambda s: f"{s.median_completion_tokens:.0f}"),
        ("model calls / question", lambda s: f"{s.mean_model_calls:.2f}"),
    ]
    for label, fmt in rows:
        lines.append(f"| {label} | {summaries[0].n if summaries else 0} | " + " | ".join(fmt(s) for s in summaries) + " |")
    return "\n".join(lines) + "\n\nMetrics reproduce, question by question:\n\n" + provenance()


# --- SVG charts --------------------------------------------------------------------------------

_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2")


def _bars(title: str, groups: list[str], series: list[tuple[str, list[float]]], unit: str = "%",
          top: float | None = None) -> str:
    w, h, pad = 640, 260, 40
    top = top or max([v for _, vals in series for v in vals] + [1.0])
    gw = (w - 2 * pad) / max(len(groups), 1)
    bw = gw / (len(series) + 1)
    out = [f'<svg viewBox="0 0 {w} {h + 40}" width="{w}" role="img" aria-label="{html.escape(title)}">',
           f'<text x="{w / 2}" y="16" text-anchor="middle" font-weight="bold">{html.escape(title)}</text>']
    for gi, g in enumerate(groups):
        x0 = pad + gi * gw
        out.append(f'<text x="{x0 + gw / 2}" y="{h + 18}" text-anchor="middle">{html.escape(g)}</text>')
        for si, (_, vals) in enumerate(series):
            v = vals[gi]
            bh = (h - pad) * v / top
            x = x0 + bw * (si + 0.5)
            out.append(f'<rect x="{x:.1f}" y="{h - bh:.1f}" width="{bw * 0.9:.1f}" height="{bh:.1f}" '
                       f'fill="{_COLORS[si % len(_COLORS)]}"><title>{v:.1f}{unit}</title></rect>')
            out.append(f'<text x="{x + bw * 0.45:.1f}" y="{h - bh - 3:.1f}" text-anchor="middle" font-size="10">{v:.0f}</text>')
    for si, (name, _) in enumerate(series):
        out.append(f'<rect x="{pad + si * 150}" y="{h + 26}" width="10" height="10" fill="{_COLORS[si % len(_COLORS)]}"/>'
                   f'<text x="{pad + si * 150 + 14}" y="{h + 35}" font-size="11">{html.escape(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def _histogram(title: str, series: list[tuple[str, list[float]]], bins: int = 20) -> str:
    values = [v for _, vals in series for v in vals]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    step = (hi - lo) / bins or 1.0
    edges = [lo + i * step for i in range(bins)]
    counted = []
    for name, vals in series:
        counts = [0] * bins
        for v in vals:
            counts[min(int((v - lo) / step), bins - 1)] += 1
        counted.append((name, [100.0 * c / max(len(vals), 1) for c in counts]))
    labels = [f"{e:.3g}" if i % 4 == 0 else "" for i, e in enumerate(edges)]
    return _bars(title, labels, counted, unit="% of questions")


def html_report(title: str, runs: Sequence[tuple[str, list[QuestionResult]]]) -> str:
    """A self-contained HTML page: the summary table, accuracy by hardness, token and latency distributions."""
    summaries = [(name, summarize(rs)) for name, rs in runs]
    levels = _levels([s for _, s in summaries])
    charts = [
        _bars("Execution accuracy by hardness (%)", levels + ["all"],
              [(name, [s.by_level.get(lv, (0, 0.0))[1] for lv in levels] + [s.ex]) for name, s in summaries], top=100.0),
        _histogram("Prompt + output tokens per question", [(n, [r.prompt_tokens + r.completion_tokens for r in rs]) for n, rs in runs]),
        _histogram("Seconds per question", [(n, [cost(r) for r in rs]) for n, rs in runs]),
    ]
    table = markdown_table(summaries)
    rows_html: list[str] = []
    for line in table.strip().splitlines():
        if not line.startswith("|") or set(line.replace("|", "").strip()) <= {"-"}:
            continue
        cells = [c.strip().replace("**", "") for c in line.strip("|").split("|")]
        tag = "th" if not rows_html else "td"
        rows_html.append("<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>")
    misses = []
    for name, rs in runs:
        wrong = [r for r in rs if not r.match][:25]
        items = "".join(
            f"<li><b>[{html.escape(r.hardness)}]</b> {html.escape(r.question)}<br><code>{html.escape(r.prediction or '(no SQL)')}</code>"
            f"<br><small>gold: <code>{html.escape(r.gold)}</code>{' · ' + html.escape(r.error) if r.error else ''}</small></li>"
            for r in wrong)
        misses.append(f"<details><summary>{html.escape(name)}: first {len(wrong)} misses</summary><ol>{items}</ol></details>")
    sources = "".join(f"<li>{html.escape(m)}: <code>{html.escape(src)}</code></li>" for m, src in OFFICIAL_SCRIPTS.items())
    medians = ", ".join(f"{n}: {statistics.median([cost(r) for r in rs]):.2f} s" for n, rs in runs if rs)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#222}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 10px;text-align:right}}
td:first-child,th:first-child{{text-align:left}}code{{font-size:12px}}li{{margin-bottom:8px}}</style></head>
<body><h1>{html.escape(title)}</h1><table>{''.join(rows_html)}</table>
<p>Median seconds per question: {html.escape(medians)}</p>
<p>Metrics reproduce, question by question:</p><ul>{sources}</ul>{''.join(charts)}{''.join(misses)}</body></html>
"""
