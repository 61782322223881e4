#!/usr/bin/env bash
# The main job, on embedded defaults: installs what is missing, builds, then
# generates a rail-optimized fabric, validates it and shows its ECMP paths,
# simulates a gray link on it, and lets the analyzer find it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh release
nd=build/cli/netdiag
out=$(mktemp -d /tmp/netdiag-demo.XXXXXX)

bold='' plain=''
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; fi
step() { printf '\n%s== %s%s\n$ %s\n' "$bold" "$1" "$plain" "${*:2}"; "${@:2}"; }

step "Generate a 2-SU rail-optimized fabric with a core tier" \
  $nd topo generate rail --sus 2 --hosts-per-su 8 --rails 8 --spines 2 --leaf-uplinks 8 --cores 4 \
  -o "$out/fabric.yaml"
step "Validate it against the topology contract" $nd topo validate "$out/fabric.yaml"
step "Counts by tier and oversubscription" $nd topo show "$out/fabric.yaml"
step "ECMP paths between two GPUs on the same rail in different units" \
  $nd topo paths "$out/fabric.yaml" su1-host1:eth3 su2-host5:eth3 --limit 4
step "Cross-rail traffic climbs to the core; per-hop ECMP share of each link" \
  $nd topo paths "$out/fabric.yaml" su1-host1:eth0 su2-host5:eth7 --limit 2 --shares
step "Simulate 1 % loss on one direction of a random leaf->spine link (onset 120 s)" \
  $nd simulate --scenario sim/scenarios/gray_loss.yaml --topology "$out/fabric.yaml" --duration 300 \
  --seed 7 --truth "$out/truth.json" -o "$out/telemetry.jsonl"
echo "(the truth, hidden from the analyzer: $(grep -o '"link": "[^"]*"' "$out/truth.json"))"
step "The analyzer replays the telemetry and localizes the link" \
  $nd replay --topology "$out/fabric.yaml" --telemetry "$out/telemetry.jsonl" --db "$out/netdiag.db" || true
$nd replay --topology "$out/fabric.yaml" --telemetry "$out/telemetry.jsonl" --json \
  >"$out/incidents.json" 2>/dev/null || true
step "Scored against the truth (formats.md §4)" \
  $nd score --truth "$out/truth.json" --report "$out/incidents.json" --topology "$out/fabric.yaml"
echo
echo "files: $out (fabric.yaml, telemetry.jsonl, truth.json, incidents.json, netdiag.db)"
