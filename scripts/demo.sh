#!/usr/bin/env bash
# The main job, on embedded defaults (SQLite, a simulated fabric, no server
# to install): installs what is missing, builds, generates a rail-optimized
# fabric and shows its ECMP paths, then runs the live pipeline on it — an
# analyzer daemon fed over gRPC by synthetic agents of a simulated fabric with
# a gray link — and asks it what is wrong, as the on-call engineer would.
# NETDIAG_DEMO_KEEP=1 leaves the analyzer running at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh release
nd=build/cli/netdiag
out=$(mktemp -d /tmp/netdiag-demo.XXXXXX)
grpc=${NETDIAG_DEMO_GRPC:-127.0.0.1:7600}
web=${NETDIAG_DEMO_WEB:-127.0.0.1:9600}

bold='' plain=''
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; fi
say() { printf '\n%s== %s%s\n' "$bold" "$1" "$plain"; }
step() { say "$1"; printf '$ %s\n' "${*:2}"; "${@:2}"; }

analyzer_pid=""
cleanup() {
  if [ -n "$analyzer_pid" ] && [ "${NETDIAG_DEMO_KEEP:-0}" != 1 ]; then
    kill "$analyzer_pid" 2>/dev/null && wait "$analyzer_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

step "Generate a 2-SU rail-optimized fabric with a core tier" \
  $nd topo generate rail --sus 2 --hosts-per-su 8 --rails 8 --spines 2 --leaf-uplinks 8 --cores 4 \
  -o "$out/fabric.yaml"
step "Validate it against the topology contract" $nd topo validate "$out/fabric.yaml"
step "Counts by tier and oversubscription" $nd topo show "$out/fabric.yaml"
step "ECMP paths between two GPUs on the same rail in different units, with per-hop shares" \
  $nd topo paths "$out/fabric.yaml" su1-host1:eth3 su2-host5:eth3 --limit 2 --shares

say "Start the analyzer daemon (gRPC for agents on $grpc, HTTP API and /metrics on http://$web)"
printf '$ %s\n' "$nd analyzer --topology $out/fabric.yaml --listen $grpc --web.listen-address $web --db $out/netdiag.db"
# --max-future: the synthetic agents below stream 5 minutes of telemetry in
# seconds, so their clocks run up to 300 s ahead of the analyzer's.
$nd analyzer --topology "$out/fabric.yaml" --listen "$grpc" --web.listen-address "$web" \
  --db "$out/netdiag.db" --max-future 3600 2>"$out/analyzer.log" &
analyzer_pid=$!
for _ in $(seq 100); do
  curl -fs "http://$web/readyz" >/dev/null 2>&1 && break
  kill -0 "$analyzer_pid" 2>/dev/null || { cat "$out/analyzer.log" >&2; exit 1; }
  sleep 0.1
done

step "Synthetic agents stream 5 minutes of the fabric's telemetry over the agents' wire, as fast as they can; 1 % loss starts on one direction of a random leaf->spine link at 120 s" \
  $nd simulate --scenario sim/scenarios/gray_loss.yaml --topology "$out/fabric.yaml" --duration 300 \
  --seed 7 --truth "$out/truth.json" --live "$grpc" --speed 0
echo "(the truth, hidden from the analyzer: $(grep -o '"link": "[^"]*"' "$out/truth.json"))"

step "What is wrong now? (exit 1: faults found)" $nd locate --analyzer "http://$web" || true
id=$($nd locate --analyzer "http://$web" --json 2>/dev/null |
     python3 -c 'import json,sys; i=json.load(sys.stdin)["incidents"]; print(i[0]["id"] if i else "")' || true)
if [ -n "$id" ]; then
  step "All the evidence behind $id, and whether draining the link is safe" \
    $nd explain "$id" --analyzer "http://$web" --topology "$out/fabric.yaml" || true
fi
$nd incidents --analyzer "http://$web" --json >"$out/incidents.json" 2>/dev/null || true
step "Scored against the truth (formats.md §4)" \
  $nd score --truth "$out/truth.json" --report "$out/incidents.json" --topology "$out/fabric.yaml"
sleep 2  # the exporter refreshes once a second
step "What Prometheus scrapes (a few of the series at http://$web/metrics)" \
  bash -c "curl -fs http://$web/metrics | grep -E '^netdiag_(link_fault|open_incidents|probe_coverage_ratio|ingest_records_total|link_drain_info)' | head -12"
echo
echo "files: $out (fabric.yaml, truth.json, incidents.json, netdiag.db, analyzer.log)"
if [ "${NETDIAG_DEMO_KEEP:-0}" = 1 ]; then
  echo "the analyzer keeps running (pid $analyzer_pid): http://$web/ , http://$web/metrics"
fi
