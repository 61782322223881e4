#!/usr/bin/env bash
# The bus's publish rate, bytes per record and an analyzer's catch-up after
# an outage (bench/bus_catchup.cc), against a nats-server with JetStream
# started here on loopback with its store in a temporary directory, and
# stopped at the end. Prints the benchmark's JSON.
#
# usage: bench/bus_catchup.sh [BUILD_DIR] [TELEMETRY_S] [FABRIC_SPEC] [--rebuild]
#   default: build 120 rail:sus=50,... (12,800 host ports)
set -euo pipefail
build=${1:-build}
telemetry=${2:-120}
fabric=${3:-rail:sus=50,hosts_per_su=32,rails=8,spines=32,leaf_uplinks=32,cores=16}
mode=${4:-}
nats=$(command -v nats-server || echo /usr/sbin/nats-server)
[[ -x $nats ]] || { echo "bus_catchup: nats-server not installed (apt-get install nats-server)" >&2; exit 2; }
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$nats" -a 127.0.0.1 -p "$port" -js -sd "$dir" -l "$dir/nats.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
"$build/bench/bus_catchup" "$telemetry" --url "nats://127.0.0.1:$port" --fabric "$fabric" $mode
