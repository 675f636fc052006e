#!/usr/bin/env bash
# `npm run lint`: typescript-eslint over the TypeScript trees (eslint.config.js), then a clang-format
# check of the tracked native C++/CUDA sources against native/'s .clang-format. Both always run; the
# exit status is non-zero if either found something.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
status=0

npx eslint --max-warnings 0 . || status=1

if ! command -v clang-format >/dev/null; then
  echo "lint: clang-format not found; install it (apt-get install -y clang-format) to check native/" >&2
  exit 1
fi
if [ ! -f native/.clang-format ] && [ ! -f .clang-format ]; then
  echo "lint: no .clang-format for native/ (native/.clang-format or ./.clang-format); refusing to check against a default style" >&2
  exit 1
fi
mapfile -t sources < <(git ls-files -- 'native/*.h' 'native/*.cc' 'native/*.cu' 'native/*.cuh' 'native/*.inc')
if [ ${#sources[@]} -eq 0 ]; then
  echo "lint: no native sources found by git ls-files (not a git checkout?)" >&2
  exit 1
fi
clang-format --dry-run --Werror "${sources[@]}" || {
  echo "lint: native/ sources differ from clang-format's output; run: git ls-files -- 'native/*.h' 'native/*.cc' 'native/*.cu' 'native/*.cuh' 'native/*.inc' | xargs clang-format -i" >&2
  status=1
}
exit $status
