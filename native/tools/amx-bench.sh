#!/usr/bin/env bash
# Builds the AMX-BF16 kernel microbenchmark (tools/amx_bench.cc) with kernel variants beside this
# tree's: amx.cc from git revisions (default: main and 46319d6, the last before the decode-path
# changes) and this tree's amx.cc with other kernel parameters (amx_bf16.inc's EE_AMX_* values).
# Build the addon first (its kernel objects are linked). The binary runs on any host with AMX.
# Usage: native/tools/amx-bench.sh OUT_BINARY [REV...]      (then: OUT_BINARY [REPS] [THREADS,...])
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath -m "$1")
shift
revs=("$@")
[ ${#revs[@]} -eq 0 ] && revs=(main 46319d6)
r=build/Release
flags=(-std=c++20 -O3 -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx512vnni -mfma -mf16c
  -mamx-tile -mamx-bf16 -mamx-int8 -Wno-maybe-uninitialized)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
objs=()
{
  i=0
  list=""
  for rev in "${revs[@]}"; do
    ns="amx_rev$i"
    mkdir -p "$tmp/$ns/cpu"
    for f in amx.cc amx.inc amx_model.inc amx_bf16.inc; do
      git show "$rev:native/src/cpu/$f" > "$tmp/$ns/cpu/$f" 2>/dev/null || rm -f "$tmp/$ns/cpu/$f"
    done
    g++ "${flags[@]}" -I"$tmp/$ns" -Isrc -Damx="$ns" -c "$tmp/$ns/cpu/amx.cc" -o "$tmp/$ns.o"
    objs+=("$tmp/$ns.o")
    if [ -f "$tmp/$ns/cpu/amx_bf16.inc" ]; then
      echo "EE_DECL($ns)"
      list+=" EE_NEW($ns, \"amx.cc of $rev\")"
    else
      echo "EE_DECL_OLD($ns)"
      list+=" EE_OLD($ns, \"amx.cc of $rev\")"
    fi
    i=$((i + 1))
  done
  # AMX_BENCH_PARAMS: the parameter variants (name:flags, space-separated, a variant's flags joined by
  # commas; "" for none).
  for v in ${AMX_BENCH_PARAMS-"pf1:-DEE_AMX_PREFETCH=1" "pf2:-DEE_AMX_PREFETCH=2" "small:-DEE_AMX_SMALL_ROWS=1000000"}; do
    ns="amx_${v%%:*}"
    IFS=, read -r -a vflags <<< "${v#*:}"
    g++ "${flags[@]}" -Isrc "${vflags[@]}" -Damx="$ns" -c src/cpu/amx.cc -o "$tmp/$ns.o"
    objs+=("$tmp/$ns.o")
    echo "EE_DECL($ns)"
    list+=" EE_NEW($ns, \"this tree ${v#*:}\")"
  done
  echo "#define EE_BENCH_VARIANTS $list"
} > "$tmp/variants.h"
g++ "${flags[@]}" -Isrc -DEE_BENCH_HEADER="\"$tmp/variants.h\"" tools/amx_bench.cc src/common/thread_pool.cc "${objs[@]}" \
  "$r/obj.target/ernie_native/src/cpu/kernels.o" "$r/obj.target/ernie_native/src/cpu/qgemm.o" "$r/kernels_avx512.a" \
  "$r/kernels_amx.a" "$r/kernels_avxvnni.a" "$r/kernels_avx2.a" -lpthread -o "$bin"
echo "built $bin"
