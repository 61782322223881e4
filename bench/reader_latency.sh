#!/usr/bin/env bash
# Reader latency while the analyzer ingests and runs passes (issue #12,
# "Readers"): one `netdiag analyzer`, fed live by `netdiag simulate --live
# --speed 1` (the fabric's real-time rate, a fraction of what the analyzer
# can ingest: docs/benchmarks.md), and build/bench/reader_latency sending
# GET /api/v1/locate and /metrics at a fixed rate over loopback once the
# engine has run its first passes. Each request is tagged by whether it
# overlapped a pass, so one run gives p99 with and without passes.
#
# usage: bench/reader_latency.sh [BUILD_DIR] [SIZE] [DURATION_S] [RATE]
#   SIZE: small (leaf-spine, 256 host ports), medium (rail, 12,800) or 100k.
set -euo pipefail
build=${1:-build}
size=${2:-medium}
duration=${3:-60}
rate=${4:-100}
netdiag="$build/cli/netdiag"
work=$(mktemp -d /tmp/netdiag-reader-latency.XXXXXX)
analyzer_pid= sim_pid=
cleanup() {
  # (The generator is only load: it would wait for its last acks.)
  [ -n "$sim_pid" ] && kill -KILL "$sim_pid" 2>/dev/null && { wait "$sim_pid" 2>/dev/null || true; }
  [ -n "$analyzer_pid" ] && kill -TERM "$analyzer_pid" 2>/dev/null && wait "$analyzer_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

case "$size" in
  small) gen=(leaf-spine --spines 4 --leaves 16 --hosts-per-leaf 16) ;;
  medium) gen=(rail --sus 50 --hosts-per-su 32 --rails 8 --spines 32 --leaf-uplinks 32 --cores 16) ;;
  100k) gen=(rail --sus 400 --hosts-per-su 32 --rails 8 --spines 32 --leaf-uplinks 32 --cores 16) ;;
  *) echo "unknown size $size" >&2; exit 2 ;;
esac
"$netdiag" topo generate "${gen[@]}" -o "$work/fabric.yaml" >&2

"$netdiag" analyzer --topology "$work/fabric.yaml" --listen 127.0.0.1:0 \
  --web.listen-address 127.0.0.1:0 --db '' --accept-sim-agents 64 2>"$work/analyzer.err" &
analyzer_pid=$!
for _ in $(seq 600); do
  grep -q 'listening:' "$work/analyzer.err" 2>/dev/null && break
  sleep 0.1
done
grpc=$(grep -o 'grpc=127.0.0.1:[0-9]*' "$work/analyzer.err" | cut -d= -f2 || true)
http=$(grep -o 'http=http://[0-9.:]*' "$work/analyzer.err" | cut -d= -f2 || true)
[ -n "$grpc" ] && [ -n "$http" ] || { cat "$work/analyzer.err" >&2; exit 1; }

# At 102,400 host ports the default plan's real-time rate (about 740 k
# probe records/s) is beyond what the generator reaches here (about 260 k/s
# acknowledged at --speed 0), and below --speed 1 its records would fall
# behind the analyzer's clock. So the generator runs a thinner plan there:
# 6 peers of one flow per host port, about 123 k records/s, under half its
# reach. The fabric, and so every directed link a pass tests, is unchanged.
scenario=()
if [ "$size" = 100k ]; then
  cat >"$work/scenario.yaml" <<'YAML'
name: readers-100k
window_s: 5
budget: {peers: 6, flows_per_peer: 1}
noise: {background_loss: 1.0e-5, path_unknown: 0.3, missing_records: 0.005}
faults: []
YAML
  scenario=(--scenario "$work/scenario.yaml")
fi
# Telemetry for the warm-up, the measurement and some slack after it.
"$netdiag" simulate --topology "$work/fabric.yaml" "${scenario[@]}" --duration $((duration + 120)) \
  --live "$grpc" --speed 1 --agents 64 --live-timeout 300 >"$work/simulate.err" 2>&1 &
sim_pid=$!

# Measure once the engine has run passes on ingested records (a positive
# signal, not a sleep): two passes past the first probe records.
metric() { curl -s "$http/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
for _ in $(seq 2400); do
  probes=$(metric 'netdiag_ingest_records_total{kind="probe"}')
  passes=$(metric netdiag_engine_passes_total)
  if [ "${probes%.*}" -gt 0 ] 2>/dev/null; then
    first=${first:-${passes%.*}}
    [ "${passes%.*}" -ge $((first + 2)) ] && break
  fi
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/simulate.err" >&2; exit 1; }
  sleep 0.5
done
before=$(metric 'netdiag_ingest_records_total{kind="probe"}')
"$build/bench/reader_latency" "$http" --rate "$rate" --duration "$duration"
after=$(metric 'netdiag_ingest_records_total{kind="probe"}')
pass_s=$(metric netdiag_engine_pass_seconds_total)
passes=$(metric netdiag_engine_passes_total)
awk -v a="$after" -v b="$before" -v d="$duration" -v s="$pass_s" -v n="$passes" 'BEGIN {
  mean = n > 0 ? 1000 * s / n : 0
  printf "reader_latency_load probe_records_per_s=%.0f mean_pass_ms=%.1f passes=%d\n", (a - b) / d, mean, n
}'
