#!/usr/bin/env bash
# Whole-process scale run of the topology engine on a 102,400-host-port
# rail-optimized fabric (12,800 hosts x 8 NICs): generate, then load +
# validate + path queries in separate processes, YAML vs JSON, and yaml-cpp's
# own tree loader for comparison. Budget: load < 10 s, peak RSS < 2 GiB.
# Usage: bench/topology_scale.sh [BUILD_DIR] [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=${2:-/tmp/netdiag-bench}
mkdir -p "$work"
gen=(rail --sus 400 --hosts-per-su 32 --rails 8 --spines 32 --leaf-uplinks 32 --cores 16)
for ext in yaml json; do
  [ -s "$work/rail100k.$ext" ] || "$build/cli/netdiag" topo generate "${gen[@]}" -o "$work/rail100k.$ext"
done
ls -l "$work"/rail100k.* >&2
"$build/bench/topology_scale" netdiag "$work/rail100k.yaml"
"$build/bench/topology_scale" netdiag "$work/rail100k.json"
"$build/bench/topology_scale" yamlcpp-tree "$work/rail100k.yaml"
