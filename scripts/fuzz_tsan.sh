#!/usr/bin/env bash
# The fuzzing and ThreadSanitizer stages of scripts/test.sh (they install
# nothing; scripts/deps.sh brings clang-14 and libclang-rt-14-dev):
#   fuzz  build-fuzz/  clang 14, libFuzzer + ASan + UBSan; only the harnesses
#                      of fuzz/ and the libraries they need are built. Each
#                      harness runs NETDIAG_FUZZ_SECONDS (default 30) from its
#                      seed corpus in fuzz/corpus/; any crash, leak, UBSan
#                      report, timeout or memory blow-up fails the stage.
#   tsan   build-tsan/ GCC 12, -fsanitize=thread; only the server and
#                      collector tests that start threads are built and run.
# Usage: scripts/fuzz_tsan.sh [fuzz|tsan|all]   (default all)
# scripts/test.sh skips it when NETDIAG_SKIP_SANITIZE=1 or NETDIAG_SKIP_FUZZ_TSAN=1.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
secs=${NETDIAG_FUZZ_SECONDS:-30}
jobs=$(nproc)

HARNESSES=(topology_loader_fuzz jsonl_engine_fuzz probe_packet_fuzz lldp_fuzz batch_ingest_fuzz
  drain_action_fuzz drain_policy_fuzz)
# The collector and server tests with threads of their own (the prober,
# responder, spool, uplink, agent and the analyzer daemon); the pure
# parsers' tests gain nothing from TSan. prober_setup_test is left out: it
# interposes epoll_ctl, which TSan intercepts too.
TSAN_TARGETS=(server_test ingest_path_test uplink_test bus_test collector_agent_test collector_prober_test
              collector_responder_test collector_spool_test collector_counters_test
              collector_lldp_test actuator_test)

build() {  # dir, cmake flags..., -- targets...
  local dir=$1; shift
  local flags=() targets=()
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift; targets=("$@")
  mkdir -p "$dir"
  cmake -S . -B "$dir" -G Ninja "${flags[@]}" >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log" >&2; exit 1; }
  if ! cmake --build "$dir" --target "${targets[@]}" -- -j"$jobs" >"$dir/build.log" 2>&1; then
    grep -E -B2 -A12 'error|FAILED' "$dir/build.log" | head -200 >&2
    echo "netdiag: build failed; full log in $dir/build.log" >&2
    exit 1
  fi
}

run_fuzz() {
  local t0=$SECONDS
  # -O1 keeps the instrumented build quick; line tables are enough for
  # symbolized reports.
  CXX=clang++-14 build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DNETDIAG_FUZZ=ON -DNETDIAG_BENCH=OFF -- "${HARNESSES[@]}"
  echo "netdiag: fuzz build took $((SECONDS - t0)) s" >&2
  local failed=0
  for h in "${HARNESSES[@]}"; do
    local name=${h%_fuzz} work=build-fuzz/work/${h%_fuzz}
    # New inputs go to a scratch corpus; the checked-in seeds are only read.
    rm -rf "$work" && mkdir -p "$work" build-fuzz/artifacts
    if build-fuzz/fuzz/"$h" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 \
         -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$name-" \
         "$work" "fuzz/corpus/$name" >"build-fuzz/$name.log" 2>&1; then
      local execs
      execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/$name.log" | grep -o '[0-9]*$')
      echo "netdiag: fuzz $name: ${execs:-?} executions in $secs s, no crash" >&2
    else
      grep -E -A30 '==ERROR|runtime error|deadly signal|timeout|out-of-memory' \
        "build-fuzz/$name.log" | head -60 >&2
      echo "netdiag: fuzz $name FAILED; log build-fuzz/$name.log, input in build-fuzz/artifacts/" >&2
      failed=1
    fi
  done
  return $failed
}

run_tsan() {
  local t0=$SECONDS
  # The release build's -O2 (at -O1 GCC 12 gives false maybe-uninitialized
  # warnings); warnings are the release build's job, so none is fatal here.
  build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" \
    -DNETDIAG_TSAN=ON -DNETDIAG_BENCH=OFF -DNETDIAG_WERROR=OFF -- "${TSAN_TARGETS[@]}"
  echo "netdiag: tsan build took $((SECONDS - t0)) s" >&2
  t0=$SECONDS
  # Only the targets above are built; ctest names the rest *_NOT_BUILT.
  (cd build-tsan &&
     TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/../tests/tsan.supp" \
     ctest --output-on-failure -j"$jobs" -L unit -E '_NOT_BUILT$')
  echo "netdiag: tsan tests took $((SECONDS - t0)) s" >&2
}

case "$what" in
  fuzz) run_fuzz ;;
  tsan) run_tsan ;;
  all) run_fuzz; run_tsan ;;
  *) echo "usage: $0 [fuzz|tsan|all]" >&2; exit 2 ;;
esac
