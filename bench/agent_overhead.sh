#!/usr/bin/env bash
# Agent overhead (issue #5 item 5): one whole `netdiag agent` process probing
# 100 peers x 8 flows x 10 probes/s (8,000 probes/s) over loopback, and
# answering them too (its own responder on 0.0.0.0 serves the peers
# 127.0.0.2..101), with path discovery on. Measures the process's CPU (user +
# system, from /proc/PID/stat) over a steady window after a warm-up, and its
# RSS (VmRSS now, VmHWM peak). Needs no root; takes about WARMUP+SECONDS+5 s.
#
# usage: bench/agent_overhead.sh [path/to/netdiag]   (env: SECONDS_RUN=60 WARMUP=10)
set -euo pipefail

NETDIAG=${1:-${NETDIAG:-build/cli/netdiag}}
SECONDS_RUN=${SECONDS_RUN:-60}
WARMUP=${WARMUP:-10}
PEERS=100
FLOWS=8
RATE=10
RESPONDER_PORT=${RESPONDER_PORT:-17601}

[[ -x "$NETDIAG" ]] || { echo "agent_overhead: no netdiag binary at $NETDIAG" >&2; exit 2; }
work=$(mktemp -d)
touch "$work/agent.log"
agent_pid=""
cleanup() {
  [[ -n "$agent_pid" ]] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The plan an analyzer would hand out: flows from 127.0.0.1 to each peer on
# distinct source ports.
python3 - "$work/plan.json" "$PEERS" "$FLOWS" "$RATE" "$RESPONDER_PORT" <<'PY'
import json, sys
out, peers, flows, rate, port = sys.argv[1], *map(int, sys.argv[2:])
plan = {"version": 1, "window_s": 5, "probes_per_second_per_flow": rate,
        "responder_port": port, "dscp": 0, "flows": []}
sport = 40000
for p in range(peers):
    for f in range(flows):
        plan["flows"].append({"src": "bench:lo", "src_addr": "127.0.0.1",
                              "dst": f"peer{p}:lo", "dst_addr": f"127.0.0.{p + 2}",
                              "source_port": sport})
        sport += 1
json.dump(plan, open(out, "w"))
PY

# No analyzer: batches go to the (bounded, in-memory) spool, which the
# numbers below include.
"$NETDIAG" agent --node bench --analyzer 127.0.0.1:1 --plan-file "$work/plan.json" \
  --metrics-address 127.0.0.1:0 --lldp false --spool-max-bytes 64Mi \
  2> "$work/agent.log" &
agent_pid=$!

metrics_url=""
for _ in $(seq 50); do
  metrics_url=$(grep -o 'http://[0-9.:]*/metrics' "$work/agent.log" | head -1 || true)
  [[ -n "$metrics_url" ]] && break
  sleep 0.1
done
[[ -n "$metrics_url" ]] || { echo "agent did not start:" >&2; cat "$work/agent.log" >&2; exit 1; }

metric() { curl -s "$metrics_url" | awk -v m="$1" '$1 == m {print $2}'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$agent_pid/stat"; }
hz=$(getconf CLK_TCK)

sleep "$WARMUP"
t0=$(date +%s.%N); c0=$(cpu_ticks); s0=$(metric netdiag_agent_probes_sent_total)
l0=$(metric netdiag_agent_probes_lost_total)
sleep "$SECONDS_RUN"
t1=$(date +%s.%N); c1=$(cpu_ticks); s1=$(metric netdiag_agent_probes_sent_total)
l1=$(metric netdiag_agent_probes_lost_total)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$agent_pid/status")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$agent_pid/status")
threads=$(awk '/Threads/ {print $2}' "/proc/$agent_pid/status")
replies=$(metric netdiag_agent_responder_replies_total)
traces=$(metric netdiag_agent_path_discoveries_total)

kill -TERM "$agent_pid"; wait "$agent_pid" || true; agent_pid=""
grep -E "plan version|stopped" "$work/agent.log" | sed 's/^/  log: /' || true

python3 - "$t0" "$t1" "$c0" "$c1" "$hz" "$s0" "$s1" "$l0" "$l1" "$rss" "$hwm" "$threads" \
  "$replies" "$traces" "$PEERS" "$FLOWS" "$RATE" <<'PY'
import sys
t0, t1, c0, c1, hz, s0, s1, l0, l1 = map(float, sys.argv[1:10])
rss, hwm, threads, replies, traces, peers, flows, rate = map(float, sys.argv[10:18])
el = t1 - t0
cpu = (c1 - c0) / hz / el
sent = s1 - s0
print(f"agent overhead: {int(peers)} peers x {int(flows)} flows x {rate:g} probes/s "
      f"({int(peers * flows)} flows, {peers * flows * rate:,.0f} probes/s planned), "
      f"probing and answering over loopback")
print(f"  measured over {el:.1f} s after a warm-up")
print(f"  probes sent       {sent / el:10,.0f} /s   lost {l1 - l0:,.0f} "
      f"({(l1 - l0) / max(sent, 1):.4%})")
print(f"  replies answered  {replies:10,.0f} total   path discoveries {traces:,.0f}")
print(f"  CPU               {cpu:10.1%} of one core (user+system)")
print(f"  RSS               {rss / 1024:10.1f} MiB now, {hwm / 1024:.1f} MiB peak, {threads:.0f} threads")
PY
