#!/usr/bin/env bash
# Configures and builds netdiag. Usage: scripts/build.sh [release|sanitize]
#   release   build/        (default; RelWithDebInfo, the binaries the demo and benchmarks use)
#   sanitize  build-asan/   (Debug with AddressSanitizer + UndefinedBehaviorSanitizer)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-release}
case "$mode" in
  release)  dir=build;      flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  sanitize) dir=build-asan; flags=(-DCMAKE_BUILD_TYPE=Debug -DNETDIAG_SANITIZE=ON -DNETDIAG_BENCH=OFF) ;;
  *) echo "usage: $0 [release|sanitize]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja "${flags[@]}" >/dev/null
if ! cmake --build "$dir" -- -j"$(nproc)" >"$dir/build.log" 2>&1; then
  grep -E -B2 -A12 'error|FAILED' "$dir/build.log" | head -200 >&2
  echo "netdiag: build failed; full log in $dir/build.log" >&2
  exit 1
fi
echo "netdiag: built $dir ($mode)" >&2
