#!/usr/bin/env bash
# The main job, on embedded defaults: installs what is missing, builds, then
# generates a rail-optimized fabric, validates it and shows its ECMP paths.
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
echo
echo "fabric file: $out/fabric.yaml"
