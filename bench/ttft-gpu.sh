#!/usr/bin/env bash
# One device call: build native/cuda, then TTFT at concurrency 1 stage by stage (bench/ttft-stages.ts)
# through `serve --device cuda --dtype bfloat16 --max-num-seqs 512`, N requests (default 300) each run,
# their first and last requests apart (byIndex): once with the gateway's warm-up off
# (--api-server-warmup-requests 0, how a fresh process serves) and once with it on (the default). Then,
# with SERVE_GPU=1, serve-gpu's c=1 rows (engine and HTTP, bf16 and float32). Expects .gpu/ as
# bench/gpu.sh does. Logs and JSON in $1/run, packed into $1/results.tar.gz at exit (also after a
# timeout): the device tool brings back only a few files of a folder.
set -uo pipefail
top=${1:-/tmp/ttft-out}
out=$top/run
mkdir -p "$out"
trap 'tar -czf "$top/results.tar.gz" -C "$top" run' EXIT
# shellcheck source=bench/gpu-prepare.sh
source bench/gpu-prepare.sh
# What a c=1 request's hops wake up on this host: the idle driver and governor, for the record.
{ cat /sys/devices/system/cpu/cpuidle/current_driver /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1; nproc; uptime; } > "$out/host.txt"
base='--device cuda --dtype bfloat16 --max-num-seqs 512'
for run in cold:0 warm:200; do
  label=${run%%:*}
  t0=$(date +%s)
  LABEL=$label SERVE_ARGS="$base --api-server-warmup-requests ${run##*:}" VARIANTS=plain N="${N:-300}" MAX_TOKENS="${MAX_TOKENS:-8}" OUT="$out/ttft-$label.json" \
    timeout "${TTFT_TIMEOUT:-45}" node --import tsx bench/ttft-stages.ts > "$out/ttft-$label.log" 2>&1
  echo "ttft-stages $label exit $? after $(( $(date +%s) - t0 )) s"
  grep -v '^\s*{"level' "$out/ttft-$label.log" | cut -c1-400 | tail -4
done
if [ "${SERVE_GPU:-0}" = 1 ]; then
  t0=$(date +%s)
  timeout "${SERVE_GPU_TIMEOUT:-100}" node --import tsx bench/serve-gpu.ts "$out" --levels 1 > "$out/serve-gpu.log" 2>&1
  echo "serve-gpu c=1 exit $? after $(( $(date +%s) - t0 )) s"
  grep -v '^{"level"' "$out/serve-gpu.log" | tail -12
fi
