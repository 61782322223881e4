# shellcheck shell=bash
# The live analyzer and agents in the namespaced fabric, shared by e2e.sh
# (gRPC) and bus_e2e.sh (NATS JetStream). Source after lib/fabric.sh and
# lib/testlib.sh; the caller sets NETDIAG, TOPO, MGMT, API, FABRIC_RUN, the
# ports and timers (WINDOW, PROBE_RATE, FLOWS_PER_PEER, RESOLVE_AFTER),
# ANALYZER_EXTRA (more analyzer flags), AGENT_UPLINK (the agents' flags
# naming where they send) and DRAIN_KEY (optional: switch agents act).

ANALYZER_PID=""
ANALYZER_EXTRA=()
AGENT_UPLINK=()

in_mgmt() { ip netns exec "$FABRIC_MGMT_NS" "$@"; }
api() { in_mgmt curl -sf --max-time 5 "$API$1"; }
locate_json() { in_mgmt "$NETDIAG" locate --analyzer "$API" --json 2>>"$FABRIC_RUN/locate.err"; }
all_incidents() { api "/api/v1/incidents?state=all"; }

start_analyzer() {
  # Not through a function: $! must be the analyzer itself (ip netns exec
  # execs it), so that killing it kills the analyzer.
  ip netns exec "$FABRIC_MGMT_NS" "$NETDIAG" analyzer --topology "$TOPO" --listen "$MGMT:$GRPC_PORT" \
    --web.listen-address "127.0.0.1:$WEB_PORT" --db "$FABRIC_RUN/netdiag.db" \
    --window "$WINDOW" --probe-rate "$PROBE_RATE" --flows-per-peer "$FLOWS_PER_PEER" \
    --responder-port "$RESPONDER_PORT" --resolve-after "$RESOLVE_AFTER" --insecure \
    "${ANALYZER_EXTRA[@]}" >>"$FABRIC_RUN/analyzer.log" 2>&1 &
  ANALYZER_PID=$!
  local i
  for i in $(seq 1 100); do
    [[ $(in_mgmt curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$API/readyz") == 200 ]] && return 0
    kill -0 "$ANALYZER_PID" 2>/dev/null || { echo "analyzer exited: $(tail -5 "$FABRIC_RUN/analyzer.log")"; return 1; }
    sleep 0.2
  done
  echo "analyzer not ready after 20 s: $(tail -5 "$FABRIC_RUN/analyzer.log")"
  return 1
}

# With DRAIN_KEY set, switch agents carry out the analyzer's drain actions
# on their FRR (the BGP session of the port, after 2 s of RFC 8326
# graceful shutdown: the fabric's sessions honour GRACEFUL_SHUTDOWN).
start_agent() {  # node
  local n=$1 drain=()
  if [[ -n ${DRAIN_KEY:-} && ${FAB_ROLE[$n]} != host ]]; then
    drain=(--drain-executor frr --drain-vty-socket "$(fabric_frr_dir "$n")" --drain-key-file "$DRAIN_KEY"
      --drain-graceful-s 2)
  fi
  ip netns exec "$(fabric_ns "$n")" "$NETDIAG" agent --node "$n" "${AGENT_UPLINK[@]}" "${drain[@]}" \
    --spool-dir "$FABRIC_RUN/spool-$n" --metrics-address "127.0.0.1:$AGENT_METRICS_PORT" \
    --batch-interval 1 --counters-interval 1 --path-refresh 20 \
    >>"$FABRIC_RUN/agent-$n.log" 2>&1 &
  echo $! >"$FABRIC_RUN/agent-$n.pid"
}

# Value of a metric (sum over its label sets) in a node's agent /metrics.
agent_metric() {  # node name
  fabric_exec "$1" curl -sf --max-time 3 "http://127.0.0.1:$AGENT_METRICS_PORT/metrics" |
    awk -v m="$2" '$1 == m || index($1, m "{") == 1 { s += $2; f = 1 } END { if (f) printf "%.0f\n", s; else print "NA" }'
}
analyzer_metric() {  # name
  api /metrics | awk -v m="$1" '$1 == m || index($1, m "{") == 1 { s += $2; f = 1 } END { if (f) printf "%.0f\n", s; else print "NA" }'
}
# Waits until the analyzer's engine has made N more passes (at most T s).
wait_passes() {  # N T
  local p0 p t0=$SECONDS
  p0=$(analyzer_metric netdiag_engine_passes_total)
  [[ $p0 =~ ^[0-9]+$ ]] || return 1
  while ((SECONDS - t0 < $2)); do
    p=$(analyzer_metric netdiag_engine_passes_total)
    [[ $p =~ ^[0-9]+$ ]] && ((p >= p0 + $1)) && return 0
    sleep 1
  done
  return 1
}

# Localized link-fault incidents of a report, as "kind link" lines.
localized_links() { jq -r '.incidents[]? | select(.localized_at != null and (.kind | startswith("link_"))) | "\(.kind) \(.link)"' | sort -u; }
reverse_link() { local l=$1; echo "${l#*->}->${l%%->*}"; }

# Waits up to T s until every agent is connected with a plan; prints the
# nodes still waiting (none: empty).
wait_agents() {  # T
  local t=$SECONDS waiting n
  while :; do
    waiting=""
    for n in "${FAB_NODES[@]}"; do
      [[ $(agent_metric "$n" netdiag_agent_uplink_connected) == 1 && $(agent_metric "$n" netdiag_agent_plan_version) != 0 &&
         $(agent_metric "$n" netdiag_agent_plan_version) != NA ]] || waiting+="$n "
    done
    [[ -z $waiting ]] || ((SECONDS - t >= $1)) && break
    sleep 1
  done
  echo "$waiting"
}
