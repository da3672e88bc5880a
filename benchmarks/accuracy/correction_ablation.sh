#!/usr/bin/env bash
# The self-correction ablation on the 200-question Spider dev sample, one run after the other:
#
#     benchmarks/accuracy/correction_ablation.sh [MODEL]        # MODEL defaults to local:1.5b
#
# Rows: zero-shot (no correction), + rule-based repair, + error correction (the `default` preset), + revision
# chain, + DAC, + voting (n = 5), and all of them with the safety check (`correct-all`). Every run checkpoints
# in .eval-runs/<name>, so an interrupted ablation resumes where it stopped when this script is run again, and
# the response cache makes a run pay only for prompts no earlier run asked. Ends with the table
# (benchmarks/tools/summarize_runs.py, right -> wrong and wrong -> right against zero-shot and against repair, the
# answer the correction stages are handed), written to benchmarks/results/correction-ablation-200.json, and
# the per-stage safety counts of the run with every stage (`sqlweave eval stages`), written to
# benchmarks/results/correction-stages-200.json.
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:-local:1.5b}"
tag="$(echo "$model" | tr ':/' '--')"
sample=benchmarks/samples/spider-dev-200.json
runs=()
for spec in zero-shot:zero-shot repair:repair default:default revise:repair+revise dac:repair+dac \
            vote:default-vote all:correct-all; do
  name="correction-${spec%%:*}-$tag"
  pipeline="${spec#*:}"
  echo "== $pipeline -> .eval-runs/$name ($(date +%T))"
  .venv/bin/sqlweave eval --dataset spider-dev --data-dir ../shared/data/spider --model "$model" \
    --sample "$sample" --pipeline "$pipeline" --out ".eval-runs/$name"
  runs+=(".eval-runs/$name")
done
.venv/bin/python benchmarks/tools/summarize_runs.py "${runs[@]}" --against ".eval-runs/correction-repair-$tag" --out benchmarks/results/correction-ablation-200.json
.venv/bin/sqlweave eval stages ".eval-runs/correction-all-$tag" --data-dir ../shared/data/spider
.venv/bin/sqlweave eval stages ".eval-runs/correction-all-$tag" --data-dir ../shared/data/spider --json \
  > benchmarks/results/correction-stages-200.json
