#!/usr/bin/env bash
# One device call: the structured-output benchmark (bench/structured.ts, CUDA, 256 streams x 128 tokens,
# full vocabulary) on this tree and on this tree with another build's src/sidecar/grammar/ (the grammar
# workers and their lowering: no native change, so one CUDA build serves both), alternating B A B A, the
# same worker count for both. Expects .gpu/ as bench/gpu-prepare.sh does, plus .gpu/base-grammar.tar:
#   git archive -o .gpu/base-grammar.tar main src/sidecar/grammar
# Usage: bash bench/structured-ab.sh OUT [WORKERS=13] [RUNS=2]. Results: OUT/structured-cuda-{branch,base}-N.json
# and their logs; the branch's last run also times the 200 schemas' compile (its JSON is the one to commit
# as bench/results/structured-cuda.json).
set -uo pipefail
out=${1:?usage: bench/structured-ab.sh OUT [WORKERS] [RUNS]}
workers=${2:-13}
runs=${3:-2}
mkdir -p "$out"
# shellcheck source=bench/gpu-prepare.sh
source bench/gpu-prepare.sh
base=/tmp/structured-ab-base
rm -rf "$base" && mkdir -p "$base" && cp -a . "$base" && (cd "$base" && rm -rf src/sidecar/grammar && tar -xf .gpu/base-grammar.tar) || exit 1
for i in $(seq 1 "$runs"); do
  for t in base branch; do
    dir=.; [ "$t" = base ] && dir=$base
    compile=1; [ "$t" = branch ] && [ "$i" = "$runs" ] && compile=200
    (cd "$dir" && timeout 150 node --import tsx bench/structured.ts --device cuda --streams 256 --max-tokens 128 --vocab full \
      --grammar-workers "$workers" --compile-schemas "$compile" --label "$t, run $i of $runs, $workers workers (bench/structured-ab.sh)" \
      --before bench/results/structured-cuda.json "$out/structured-cuda-$t-$i.json" > "$out/$t-$i.log" 2>&1)
    echo "$t run $i exit $?"; grep -E "^\[structured\] (constrained|unconstrained|compile)" "$out/$t-$i.log"
  done
done
