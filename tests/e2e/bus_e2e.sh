#!/usr/bin/env bash
# netdiag end to end on the bus (issue #13): the namespaced fabric of e2e.sh
# with a nats-server (JetStream) in nd-mgmt between the agents and the
# analyzer. Every agent runs with --bus and gets its plan by request/reply;
# the analyzer runs with --bus and consumes the stream. Then:
#   1. on the healthy fabric nothing is localized;
#   2. 3 % loss on leaf0:swp3->spine0:swp1: `netdiag locate --json` names
#      exactly that directed link;
#   3. while the loss is on, the analyzer is killed (SIGKILL) and restarted:
#      it rebuilds its evidence from the stream, the incident keeps its id
#      and stays localized, and no agent loses a batch (spools drain, none
#      dropped);
#   4. the loss removed, the incident resolves (at most 180 s + resolve-after +
#      60 s, as in e2e.sh; it takes about 30 s).
#
#   usage: bus_e2e.sh [path/to/netdiag]   (default: $NETDIAG, else netdiag on PATH)
# Prints one PASS/FAIL line per step. Exit 0 pass, 1 fail, 77 skip (not
# root, no netns, FRR/lldpd/nft/nats-server missing). About 3 minutes.
# E2E_KEEP=1 keeps the run directory (logs).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib/fabric.sh"
source "$HERE/lib/testlib.sh"
source "$HERE/lib/live.sh"

NETDIAG=${1:-${NETDIAG:-$(command -v netdiag || true)}}
TOPO=$HERE/fabric.yaml
WINDOW=2; PROBE_RATE=400; FLOWS_PER_PEER=8; RESOLVE_AFTER=20; LOCATE_DEADLINE=120
GRPC_PORT=7600; WEB_PORT=9600; AGENT_METRICS_PORT=9700; RESPONDER_PORT=7601
NATS_PORT=4222; NATS_MONITOR_PORT=8222
NATS_SERVER=$(command -v nats-server || echo /usr/sbin/nats-server)

e2e_require_fabric
[[ -x $NATS_SERVER ]] || e2e_skip "nats-server not installed (Debian package nats-server)"
[[ -n $NETDIAG && -x $NETDIAG ]] || { echo "FAIL: netdiag binary not found (give its path, or set NETDIAG)"; exit 1; }
NETDIAG=$(readlink -f "$NETDIAG")
e2e_lock
fabric_use_run_prefix

FABRIC_RUN=$(mktemp -d /tmp/nd-bus-e2e.XXXXXX)
chmod 755 "$FABRIC_RUN"
NATS_PID=""
cleanup() {
  [[ -n $NATS_PID ]] && { kill "$NATS_PID" 2>/dev/null; wait "$NATS_PID" 2>/dev/null; }
  fabric_teardown
  if ((E2E_FAILED)) || [[ ${E2E_KEEP:-} == 1 ]]; then
    echo "logs kept in $FABRIC_RUN (analyzer.log, agent-<node>.log, nats.log)"
  else
    rm -rf "$FABRIC_RUN"
  fi
}
trap cleanup EXIT
trap 'echo "FAIL: interrupted"; E2E_FAILED=$((E2E_FAILED + 1)); exit 1' INT TERM

fabric_load "$TOPO" || exit 1
MGMT=$(fabric_mgmt_server_addr)
API=http://127.0.0.1:$WEB_PORT
BUS=nats://$MGMT:$NATS_PORT
ANALYZER_EXTRA=(--bus "$BUS")
AGENT_UPLINK=(--bus "$BUS")

# --- 0. the fabric, the bus, the analyzer, the agents ------------------------------

t=$SECONDS
if fabric_create && fabric_start_frr && fabric_start_lldpd && fabric_wait_ecmp 60 && fabric_wait_lldp 30; then
  e2e_result "fabric" "2 spines, 3 leaves, 6 hosts routed by BGP with ECMP" "up after $((SECONDS - t)) s" 0
else
  e2e_result "fabric" "the namespaced fabric up" "setup failed (tests/e2e/fabric_test.sh checks the fabric alone)" 1
  exit 1
fi

# ip netns exec execs the server: $! is nats-server itself.
ip netns exec "$FABRIC_MGMT_NS" "$NATS_SERVER" -a "$MGMT" -p "$NATS_PORT" -m "$NATS_MONITOR_PORT" -js \
  -sd "$FABRIC_RUN/nats" -l "$FABRIC_RUN/nats.log" &
NATS_PID=$!
t=$SECONDS; bus=""
while ((SECONDS - t < 30)); do
  bus=$(in_mgmt curl -sf --max-time 1 "http://$MGMT:$NATS_MONITOR_PORT/healthz?js-enabled=true")
  [[ $bus == *ok* ]] && break
  sleep 0.2
done
e2e_result "bus" "nats-server with JetStream in $FABRIC_MGMT_NS on $BUS" "healthz: ${bus:-no answer}" \
  "$([[ $bus == *ok* ]]; echo $?)"
[[ $bus == *ok* ]] || exit 1

if start_analyzer; then
  e2e_result "analyzer" "ready on the bus" "ready" 0
else
  e2e_result "analyzer" "ready on the bus" "not ready" 1; exit 1
fi
for n in "${FAB_NODES[@]}"; do start_agent "$n"; done
t=$SECONDS
waiting=$(wait_agents 60)
e2e_result "agents" "${#FAB_NODES[@]} agents publishing on the bus, each with its plan (request/reply)" \
  "after $((SECONDS - t)) s; not ready: ${waiting:-none}" "$([[ -z $waiting ]]; echo $?)"
[[ -z $waiting ]] || exit 1

# --- 1. healthy: nothing localized -----------------------------------------------

sleep $((WINDOW * 5 + 5))
base=$(all_incidents | localized_links | tr '\n' ';')
probes=$(analyzer_metric 'netdiag_ingest_records_total{kind="probe"}')
e2e_result "baseline" "probe records through the stream, nothing localized" \
  "probe records: $probes; localized: ${base:-none}" "$([[ -z $base && $probes =~ ^[0-9]+$ && $probes -gt 0 ]]; echo $?)"

# --- 2. 3 % loss on one directed leaf->spine link ----------------------------------

LOSS_NODE=leaf0; LOSS_PORT=swp3
LOSS_LINK="$LOSS_NODE:$LOSS_PORT->${FAB_PEER[$LOSS_NODE:$LOSS_PORT]}"
fabric_loss_add "$LOSS_NODE" "$LOSS_PORT" 3
t=$SECONDS; seen=""; found=""
while ((SECONDS - t < LOCATE_DEADLINE)); do
  seen=$(locate_json | localized_links | tr '\n' ';')
  if [[ $seen == "link_loss $LOSS_LINK;" || $seen == "link_corruption $LOSS_LINK;" ]]; then found=$((SECONDS - t)); break; fi
  sleep 2
done
e2e_result "loss located" "locate --json names exactly $LOSS_LINK within ${LOCATE_DEADLINE} s" \
  "${found:+after $found s: }${seen:-nothing localized}" "$([[ -n $found ]]; echo $?)"
id=$(locate_json | jq -r --arg l "$LOSS_LINK" '[.incidents[]? | select(.link == $l and .localized_at != null) | .id][0] // empty')

# --- 3. kill -9 mid-fault: evidence rebuilt, same incident, nothing lost ------------

declare -A made
kill -KILL "$ANALYZER_PID"
wait "$ANALYZER_PID" 2>/dev/null
sleep 5  # the agents keep publishing into the stream meanwhile
for n in "${FAB_NODES[@]}"; do made[$n]=$(agent_metric "$n" netdiag_agent_batches_total); done
start_analyzer; rc=$?
rebuilt=$(grep -c "bus: evidence rebuilt from" "$FABRIC_RUN/analyzer.log")
after=""
t=$SECONDS
while ((rc == 0 && SECONDS - t < 30)); do
  after=$(locate_json | jq -r --arg l "$LOSS_LINK" '[.incidents[]? | select(.link == $l and .localized_at != null) | .id][0] // empty')
  [[ -n $after && $after == "$id" ]] && break
  sleep 1
done
e2e_result "kill -9 and restart" "evidence rebuilt from the stream; $LOSS_LINK still localized as ${id:-?}" \
  "restart rc $rc; rebuilt lines $rebuilt; localized as ${after:-nothing} after $((SECONDS - t)) s" \
  "$([[ $rc == 0 && $rebuilt -ge 2 && -n $id && $after == "$id" ]]; echo $?)"

t=$SECONDS; pending=""
while ((SECONDS - t < 60)); do
  pending=""
  for n in "${FAB_NODES[@]}"; do
    a=$(agent_metric "$n" netdiag_agent_uplink_batches_acked_total); s=$(agent_metric "$n" netdiag_agent_spool_batches)
    [[ $a =~ ^[0-9]+$ && $a -ge ${made[$n]} && $s =~ ^[0-9]+$ && $s -le 2 ]] || pending+="$n(acked $a of ${made[$n]}, spool $s) "
  done
  [[ -z $pending ]] && break
  sleep 2
done
dropped=0
for n in "${FAB_NODES[@]}"; do
  d=$(agent_metric "$n" netdiag_agent_spool_dropped_total); [[ $d =~ ^[0-9]+$ ]] && dropped=$((dropped + d))
done
e2e_result "no telemetry lost" "every batch made before the restart stored by the stream, spools drained, 0 dropped" \
  "pending: ${pending:-none}; dropped $dropped" "$([[ -z $pending && $dropped == 0 ]]; echo $?)"

# --- 4. the loss removed: the incident resolves -------------------------------------

fabric_loss_del "$LOSS_NODE" "$LOSS_PORT"
t=$SECONDS; state=""
while ((SECONDS - t < 180 + RESOLVE_AFTER + 60)); do
  state=$(api "/api/v1/incidents/$id" | jq -r 'if .incident.resolved_at == null then "open" else "resolved" end')
  [[ $state == resolved ]] && break
  sleep 3
done
e2e_result "resolved" "$id resolves once the loss is gone" "${state:-unknown} after $((SECONDS - t)) s" \
  "$([[ $state == resolved ]]; echo $?)"

e2e_summary
