"""Fit the answer-confidence calibration on the 200-question sample and check it on held-out questions.

    .venv/bin/python benchmarks/tools/calibrate.py .eval-runs/default-972 --write

Reads a run folder of ``sqlweave eval --out FOLDER`` (``results.jsonl`` and ``traces.jsonl``, or a checkpoint's
``traces.jsonl.gz``), re-runs each prediction on its database to see its result, reads back from each trace the
signals its stages set (:func:`recorded_signals`), computes :func:`sqlweave.confidence.features` for every
answer, and fits a logistic model (scikit-learn, L2 strength chosen by 5-fold cross-validation on the training
questions only) on the questions of the training sample (``--train``, default the 200-question sample). Then it
reports, for the training questions, the other questions of the run (held out) and the 120-question held-out
sample: the expected calibration error (10 equal-width bins), the Brier score, the ROC AUC, and the EX of the 50%, 70% and 90% most confident answers. ``--write`` stores the fitted
weights as ``sqlweave/data/confidence.json``; ``--out`` writes the figures as JSON (a fit's go to
``benchmarks/results/confidence.json`` unless told otherwise). ``--as-answered`` fits nothing and measures the
confidence each answer of the run carried, what its users were shown (voted answers included), on the same sets;
it writes JSON only with ``--out``:

    .venv/bin/python benchmarks/tools/calibrate.py .eval-runs/rw-best-972 --as-answered \
        --out benchmarks/results/confidence-best-as-answered.json

When the run voted on some answers, it also reports whether the vote's agreement would make
those answers' confidence better (:func:`vote_refit`; reported, never written). Needs the ``embed`` extra
(scikit-learn comes with sentence-transformers).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlweave.confidence import Signals

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md
from benchmarks.common import ROOT, SPIDER, RESULTS, SAMPLES, save, traces as read_traces, write_json  # noqa: E402
SHIPPED = ROOT / "sqlweave" / "data" / "confidence.json"

VOTE_STAGES = ("vote", "vote_if_unsure")


def recorded_signals(trace: list[dict[str, Any]]) -> "Signals":
    """The :class:`~sqlweave.confidence.Signals` a recorded answer's stages set, read back from its stored trace
    (``traces.jsonl`` keeps each stage's name, notes, error and calls, not the signals): the first ``execute``'s
    error, the names the ``extract_sql`` before it found missing, a ``repair`` that changed the query, a
    ``correct``, ``revise`` or ``dac`` that asked the model, and each query ``name_keys`` named."""
    from sqlweave.confidence import Signals

    out = Signals()
    for entry in trace:
        stage, notes = entry.get("stage"), entry.get("notes") or {}
        if stage == "extract_sql":
            out.extracted(len(notes.get("schema_issues") or ()))
        elif stage == "execute":
            out.executed(failed=entry.get("error") is not None)
        elif stage == "repair" and notes.get("changed"):
            out.repaired = True
        elif stage in ("correct", "revise", "dac") and entry.get("calls"):
            out.corrected = True
        elif stage == "name_keys" and notes.get("changed") and notes.get("sql"):
            out.named(str(notes["sql"]), str(notes.get("named_from") or notes["sql"]))
    return out


def load_run(folder: Path, data_dir: Path) -> list[dict[str, Any]]:
    """Every scored answer of a run with its signals (the prediction re-run on its database for its result)."""
    from sqlweave.confidence import FEATURES, features
    from sqlweave.database import Database
    from sqlweave.errors import SqlweaveError

    traces = {t["id"]: t["trace"] for t in read_traces(folder)}  # traces.jsonl, or a checkpoint's .gz
    rows, dbs = [], {}
    with open(folder / "results.jsonl", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if r["db_id"] not in dbs:
                dbs[r["db_id"]] = Database.open(data_dir / "database" / r["db_id"] / f"{r['db_id']}.sqlite")
            db = dbs[r["db_id"]]
            result, error = None, None
            if r.get("prediction"):
                try:
                    result = db.execute(r["prediction"])
                except SqlweaveError as err:
                    error = err
            values = features(r["question"], r.get("prediction"), result, recorded_signals(traces.get(r["id"], [])),
                              "sqlite")
            vote = next((e.get("notes") or {} for e in traces.get(r["id"], []) if e.get("stage") in VOTE_STAGES), {})
            rows.append({"id": r["id"], "hardness": r.get("hardness"), "right": bool(r["match"]),
                         "answered": result is not None and error is None and bool(r.get("prediction")),
                         "x": [values[k] for k in FEATURES], "confidence": r.get("confidence"),
                         "agreement": None if vote.get("skipped") else vote.get("agreement")})
    for db in dbs.values():
        db.close()
    return rows


def fit(train: list[dict[str, Any]]) -> dict[str, Any]:
    """A logistic model on the answered training questions (unanswered ones get 0 without a model)."""
    import warnings

    import numpy as np
    from sklearn.linear_model import LogisticRegressionCV

    from sqlweave.confidence import FEATURES

    answered = [r for r in train if r["answered"]]
    x = np.array([r["x"] for r in answered], dtype=float)
    y = np.array([r["right"] for r in answered], dtype=int)
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales == 0] = 1.0
    model = LogisticRegressionCV(Cs=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0], cv=5, scoring="neg_log_loss", max_iter=5000)
    with warnings.catch_warnings():  # scikit-learn 1.9 announces changes to defaults this fit does not use
        warnings.simplefilter("ignore", FutureWarning)
        model.fit((x - means) / scales, y)
    return {"weights": {f: round(float(w), 6) for f, w in zip(FEATURES, model.coef_[0])},
            "intercept": round(float(model.intercept_[0]), 6),
            "means": {f: round(float(m), 6) for f, m in zip(FEATURES, means)},
            "scales": {f: round(float(s), 6) for f, s in zip(FEATURES, scales)},
            "about": {"C": float(model.C_[0]), "answered_training_questions": len(answered)}}


def vote_refit(train: list[dict[str, Any]], held: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Would the candidates' agreement make voted answers' confidence better? A logistic model of rightness on
    the logit of the confidence the run gave (``confidence`` in its results) and the vote's agreement, fitted on
    the training questions' voted answers and measured on the held-out ones against the run's own confidence."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    def voted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in rows if r["answered"] and r["agreement"] is not None and r["confidence"]]

    def x(rows: list[dict[str, Any]]) -> Any:
        p = np.clip([r["confidence"] for r in rows], 1e-4, 1 - 1e-4)
        return np.column_stack([np.log(p / (1 - p)), [r["agreement"] for r in rows]])

    fit_on, check_on = voted(train), voted(held)
    if len(fit_on) < 10 or len({r["right"] for r in fit_on}) < 2 or not check_on:
        return None
    model = LogisticRegression(C=1.0).fit(x(fit_on), [int(r["right"]) for r in fit_on])
    refit = [float(p) for p in model.predict_proba(x(check_on))[:, 1]]
    return {"training_voted": len(fit_on), "held_out_voted": len(check_on),
            "weights": {"confidence_logit": round(float(model.coef_[0][0]), 4),
                        "agreement": round(float(model.coef_[0][1]), 4),
                        "intercept": round(float(model.intercept_[0]), 4)},
            "run_confidence": measure(check_on, [float(r["confidence"]) for r in check_on]),
            "refit": measure(check_on, refit)}


def measure(rows: list[dict[str, Any]], probs: list[float]) -> dict[str, Any]:
    """Calibration error, Brier score, AUC and selective accuracy of ``probs`` for ``rows``."""
    from sklearn.metrics import roc_auc_score

    n = len(rows)
    right = [1.0 if r["right"] else 0.0 for r in rows]
    ece = 0.0
    for b in range(10):
        idx = [i for i, p in enumerate(probs) if b / 10 <= p < (b + 1) / 10 or (b == 9 and p == 1.0)]
        if idx:
            ece += len(idx) / n * abs(sum(probs[i] for i in idx) / len(idx) - sum(right[i] for i in idx) / len(idx))
    order = sorted(range(n), key=lambda i: -probs[i])
    selective = {}
    for cover in (0.5, 0.7, 0.9, 1.0):
        k = max(1, round(cover * n))
        selective[f"{int(cover * 100)}%"] = round(100 * sum(right[i] for i in order[:k]) / k, 1)
    floors = {}
    for floor in (0.5, 0.6, 0.7, 0.8):
        flagged = [i for i in range(n) if probs[i] < floor]
        kept = [i for i in range(n) if probs[i] >= floor]
        floors[str(floor)] = {"flagged_pct": round(100 * len(flagged) / n, 1),
                              "ex_flagged": round(100 * sum(right[i] for i in flagged) / len(flagged), 1) if flagged else None,
                              "ex_kept": round(100 * sum(right[i] for i in kept) / len(kept), 1) if kept else None}
    return {"questions": n, "ex": round(100 * sum(right) / n, 1), "mean_confidence": round(100 * sum(probs) / n, 1),
            "min_confidence": floors,
            "ece": round(100 * ece, 1), "brier": round(sum((p - y) ** 2 for p, y in zip(probs, right)) / n, 4),
            "auc": round(float(roc_auc_score(right, probs)), 3) if 0 < sum(right) < n else None,
            "selective_ex": selective}


def print_report(report: dict[str, Any]) -> None:
    """The calibration table of each set, then what each ``--min-confidence`` floor does to the held-out answers."""
    print("| questions | n | EX | mean confidence | calibration error (ECE) | Brier | AUC | EX of top 50% | top 70% | top 90% |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, m in report.items():
        s = m["selective_ex"]
        print(f"| {name} | {m['questions']} | {m['ex']} | {m['mean_confidence']} | {m['ece']} | {m['brier']} | "
              f"{m['auc']} | {s['50%']} | {s['70%']} | {s['90%']} |")
    held = report.get("held out (rest of the run)")
    if held:
        print("\n| --min-confidence | answers marked unsure | EX of those | EX of the others |")
        print("|---|---|---|---|")
        for floor, m in held["min_confidence"].items():
            print(f"| {floor} | {m['flagged_pct']}% | {m['ex_flagged']} | {m['ex_kept']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--data-dir", type=Path, default=SPIDER)
    parser.add_argument("--train", type=Path, default=SAMPLES / "spider-dev-200.json")
    parser.add_argument("--heldout", type=Path, default=SAMPLES / "spider-dev-heldout-120.json")
    parser.add_argument("--write", action="store_true", help=f"store the fitted weights as {SHIPPED}")
    parser.add_argument("--out", type=Path, help="write the figures as JSON (a fit: benchmarks/results/confidence.json "
                        "unless given; --as-answered: only when given, so it never replaces the fit's record)")
    parser.add_argument("--as-answered", action="store_true",
                        help="fit nothing: measure the confidence every answer of the run carried")
    args = parser.parse_args()
    if args.as_answered and args.write:
        parser.error("--as-answered fits nothing, so there is nothing to --write")

    from sqlweave.confidence import FEATURES, Calibration

    rows = load_run(args.run, args.data_dir)
    train_ids = set(json.loads(args.train.read_text())["ids"])
    heldout_ids = set(json.loads(args.heldout.read_text())["ids"])
    train = [r for r in rows if r["id"] in train_ids]
    sets = {"training (200-question sample)": train,
            "held out (rest of the run)": [r for r in rows if r["id"] not in train_ids],
            "held-out 120-question sample": [r for r in rows if r["id"] in heldout_ids]}
    if args.as_answered:
        if any(r["confidence"] is None for r in rows):
            raise SystemExit(f"{args.run} has answers without a confidence: run it again with sqlweave eval")
        report = {name: measure(subset, [float(r["confidence"]) for r in subset])
                  for name, subset in sets.items() if subset}
        print_report(report)
        if args.out:
            save(args.out, {"run": str(args.run), "as_answered": True, "report": report})
        return
    fitted = fit(train)
    fitted["about"] |= {"run": args.run.name, "train": args.train.name, "date": time.strftime("%Y-%m-%d")}
    cal = Calibration.from_dict(fitted)

    def probs(subset: list[dict[str, Any]]) -> list[float]:
        return [cal.probability(dict(zip(FEATURES, r["x"]))) if r["answered"] else 0.0 for r in subset]

    report = {name: measure(subset, probs(subset)) for name, subset in sets.items() if subset}
    fitted["about"]["heldout"] = report.get("held out (rest of the run)")
    print_report(report)
    held_rows = [r for r in rows if r["id"] not in train_ids]
    refit = vote_refit(train, held_rows)
    if refit:
        print(f"\nvoted answers held out ({refit['held_out_voted']}; refit on {refit['training_voted']} of the "
              f"training questions with the vote's agreement):")
        print("| confidence | EX | mean confidence | calibration error | Brier | AUC |")
        print("|---|---|---|---|---|---|")
        for name in ("run_confidence", "refit"):
            m = refit[name]
            print(f"| {name} | {m['ex']} | {m['mean_confidence']} | {m['ece']} | {m['brier']} | {m['auc']} |")
    print("\nweights (standardised signals):")
    for f, w in sorted(fitted["weights"].items(), key=lambda kv: -abs(kv[1])):
        print(f"  {f:20s} {w:+.3f}")
    save(args.out or RESULTS / "confidence.json",
         {"run": str(args.run), "fitted": fitted, "report": report, "vote_refit": refit})
    if args.write:
        write_json(SHIPPED, fitted)
        print(f"\nwrote {SHIPPED.relative_to(ROOT)}")
    if not math.isfinite(fitted["intercept"]):
        raise SystemExit("the fit did not converge")


if __name__ == "__main__":
    main()
