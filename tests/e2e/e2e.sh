#!/usr/bin/env bash
# netdiag end to end, live, in a real fabric of Linux routers in network
# namespaces (lib/fabric.sh builds tests/e2e/fabric.yaml, routed by FRR BGP).
#
#   usage: e2e.sh [path/to/netdiag]      (default: $NETDIAG, else netdiag on PATH)
#
# One analyzer runs in namespace nd-mgmt; an agent runs in every host and
# switch namespace and reaches it over the management network (mgmt0 veths
# bridged in nd-mgmt, 192.168.77.0/24), never over the fabric's links. Then:
#   1. 3 % loss on leaf0:swp3->spine0:swp1: `netdiag locate --json` names
#      exactly that directed link within 120 s; the analyzer runs
#      --drain-policy auto, so it drains the link: leaf0's agent shuts the
#      port's BGP session in FRR, leaf0 routes over its other uplink only,
#      and the hosts' probe loss is back to background (the detect,
#      localize, drain and resolve times are printed, against Xingmai's
#      1 / 3 / 5 minutes); the rule is removed, `netdiag drain undo`
#      restores the session and ECMP width, and the incident must resolve
#      (checked after steps 2 and 3, which run on other leaves meanwhile:
#      evidence ages out over the engine's horizon). Before it, the healthy
#      and busy-host baselines drain nothing. Then pod 1's policy is
#      approve: 3 % loss on leaf1:swp4->spine1 waits for approval and
#      `netdiag drain approve` drains it (then undone); with the policy
#      frozen, a person drains leaf2's other uplink for loss on
#      leaf2:swp3->spine0 (`netdiag drain link`): the loss persists, so the
#      auto policy rolls that drain back;
#   2. leaf1:swp4 down: a link_down incident on it, no new incident on any
#      other link (those traffic moved to); then 3 % loss on leaf1's last
#      uplink: the drain policy refuses to drain it (ecmp_width), in the
#      audit and in `netdiag explain`; back up, the link_down resolves;
#   3. the cables of leaf1 and leaf2 swapped at spine1 (spine1:swp2 and
#      spine1:swp3 trade them): a miscabling incident naming their ports;
#   4. while still swapped, the analyzer is killed (SIGKILL) for 60 s and
#      restarted: every incident kept (SQLite), the open miscabling
#      incidents still open under the same ids, nothing the agents produced
#      lost (spools drained, none dropped, every batch made before the
#      restart acknowledged, the analyzer ingested at least what was
#      acknowledged since the kill); the cables go back and the miscabling
#      resolves;
#   4b. leaf0's agent, served by a rogue analyzer (netdiag_rogue_analyzer),
#      refuses and counts a forged, an unsigned, a stale, a foreign-port and
#      a replayed drain action, and leaf0 keeps every route;
#   5. SNMP only (issue 16), on the same fabric: the switches' agents and
#      lldpd stop; each switch runs snmpd with lldpd as its AgentX subagent
#      (lib/snmp.sh), and `netdiag poll snmp` in nd-mgmt polls them every
#      2 s (IF-MIB, LLDP-MIB) for the analyzer, as snmp-poller-1; its
#      /metrics shows netdiag_snmp_target_up 1 for every switch. Then, from
#      SNMP and the hosts' probes alone: (a) 3 % loss on
#      spine0:swp3->leaf2:swp3 (no counter shows it) is localized from the
#      probes; (b) leaf1:swp3 down is a link_down on it, resolved once back
#      up; (c) the cables of leaf0 and leaf2 swapped at spine0 (swp1 and
#      swp3 trade them) are a miscabling naming all four ports; nothing
#      else is localized.
# Prints one PASS/FAIL line per step with what was expected and seen. Exit 0
# pass, 1 fail, 77 skip (not root, no netns, FRR/lldpd/nft/snmpd missing).
# Takes about 9 minutes (at most 14). E2E_KEEP=1 keeps the run directory (logs).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib/fabric.sh"
source "$HERE/lib/testlib.sh"
source "$HERE/lib/snmp.sh"
source "$HERE/lib/live.sh"

NETDIAG=${1:-${NETDIAG:-$(command -v netdiag || true)}}
TOPO=$HERE/fabric.yaml
# Short windows and timers: the whole run stays under 10 minutes.
WINDOW=${E2E_WINDOW:-2}               # seconds per probe record
PROBE_RATE=${E2E_PROBE_RATE:-400}     # probes/s per host port (the plan's budget)
FLOWS_PER_PEER=${E2E_FLOWS_PER_PEER:-8}
RESOLVE_AFTER=${E2E_RESOLVE_AFTER:-20}
OUTAGE=${E2E_OUTAGE:-60}
LOCATE_DEADLINE=${E2E_LOCATE_DEADLINE:-120}
GRPC_PORT=7600; WEB_PORT=9600; AGENT_METRICS_PORT=9700; RESPONDER_PORT=7601
POLLER_METRICS_PORT=9710   # the SNMP poller's /metrics, in nd-mgmt

e2e_require_fabric
missing=$(snmp_missing)
[[ -z $missing ]] || e2e_skip "not installed: $missing"
[[ -n $NETDIAG && -x $NETDIAG ]] || { echo "FAIL: netdiag binary not found (give its path, or set NETDIAG)"; exit 1; }
NETDIAG=$(readlink -f "$NETDIAG")
e2e_lock
fabric_use_run_prefix

FABRIC_RUN=$(mktemp -d /tmp/nd-e2e.XXXXXX)
chmod 755 "$FABRIC_RUN"
# Drains: the key the analyzer signs with and the switches check, and the
# API token for `netdiag drain undo`.
DRAIN_KEY=$FABRIC_RUN/drain.key; API_TOKEN=$FABRIC_RUN/api.token
(umask 077; head -c 32 /dev/urandom | base64 >"$DRAIN_KEY"; head -c 32 /dev/urandom | base64 >"$API_TOKEN")
# The drain policy: auto, but pod 1 (leaf1 and its hosts) waits for a
# person's approval. The scenarios run back to back, so incidents of the
# last ones are still open while they resolve: up to 5 open may act. An
# undo restores once the link's counters are clean for 10 s (agents report
# them every second).
cat >"$FABRIC_RUN/drain-policy.yaml" <<'POLICY'
mode: auto
max_open_incidents: 5
restore_clean_s: 10
scopes:
  pod 1: {mode: approve}
POLICY
ANALYZER_EXTRA=(--collectors "$FABRIC_RUN/collectors.yaml" --drain-policy-file "$FABRIC_RUN/drain-policy.yaml"
  --drain-key "$DRAIN_KEY" --api-token-file "$API_TOKEN")
cleanup() {
  snmp_kill_pidfiles "$FABRIC_RUN/poller.pid"
  snmp_stop
  fabric_teardown
  if ((E2E_FAILED)) || [[ ${E2E_KEEP:-} == 1 ]]; then
    echo "logs kept in $FABRIC_RUN (analyzer.log, agent-<node>.log, poller.log, frr-*/, lldpd-*/, snmp-*/)"
  else
    rm -rf "$FABRIC_RUN"
  fi
}
trap cleanup EXIT
trap 'echo "FAIL: interrupted"; E2E_FAILED=$((E2E_FAILED + 1)); exit 1' INT TERM

fabric_load "$TOPO" || exit 1
# Namespaces of a run that was killed before its trap ran (we hold the lock,
# so no other run owns them).
for ns in $(fabric_namespaces); do
  [[ -e /run/netns/$ns ]] && { echo "NOTE: removing leftovers of an earlier run"; fabric_teardown; break; }
done

MGMT=$(fabric_mgmt_server_addr)
API=http://127.0.0.1:$WEB_PORT
AGENT_UPLINK=(--analyzer "$MGMT:$GRPC_PORT")

# --- helpers ------------------------------------------------------------------

# Nodes whose target the SNMP poller's last poll reached, sorted.
snmp_targets_up() {
  in_mgmt curl -sf --max-time 3 "http://127.0.0.1:$POLLER_METRICS_PORT/metrics" |
    awk 'index($1, "netdiag_snmp_target_up{") == 1 && $2 + 0 == 1 && match($1, /target="[^"]*"/) {
      print substr($1, RSTART + 8, RLENGTH - 9) }' | sort
}


# --- 0. the fabric, the analyzer, the agents -----------------------------------

t=$SECONDS
if fabric_create && fabric_start_frr && fabric_start_lldpd && fabric_wait_ecmp 60 && fabric_wait_lldp 30; then
  e2e_result "fabric" "2 spines, 3 leaves, 6 hosts routed by BGP with ECMP, LLDP as cabled" "up after $((SECONDS - t)) s" 0
else
  e2e_result "fabric" "the namespaced fabric up" "setup failed (see above; tests/e2e/fabric_test.sh checks the fabric alone)" 1
  exit 1
fi
bad=$(e2e_ping_failures)
[[ -z $bad ]] || { e2e_result "reachability" "all host pairs ping" "failures: $bad" 1; exit 1; }

# The SNMP poller of step 5 may speak for every switch (their own agents too
# until then).
snmp_write_collectors "$FABRIC_RUN/collectors.yaml" || exit 1
if start_analyzer; then
  e2e_result "analyzer" "ready (/readyz 200) in $FABRIC_MGMT_NS on $MGMT:$GRPC_PORT" "ready" 0
else
  e2e_result "analyzer" "ready (/readyz 200)" "not ready" 1; exit 1
fi

for n in "${FAB_NODES[@]}"; do start_agent "$n"; done
t=$SECONDS
waiting=$(wait_agents 60)
flows=0
for n in $(fabric_hosts); do f=$(agent_metric "$n" netdiag_agent_flows); [[ $f =~ ^[0-9]+$ ]] && flows=$((flows + f)); done
e2e_result "agents" "${#FAB_NODES[@]} agents connected with a plan, hosts probing" \
  "after $((SECONDS - t)) s; not ready: ${waiting:-none}; host flows: $flows" \
  "$([[ -z $waiting && $flows -gt 0 ]]; echo $?)"
[[ -z $waiting ]] || exit 1

# Healthy baseline, from the agents' start on: probes flow for a few windows
# and nothing is localized, not even for a moment (every incident counts,
# resolved ones too: a false page at start-up that later resolves still
# woke someone).
localized_ever() { all_incidents | localized_links | tr '\n' ';'; }
sleep $((WINDOW * 5 + 5))
base=$(localized_ever)
probes=$(analyzer_metric netdiag_ingest_records_total)
e2e_result "baseline" "records ingested, no localized link fault on a healthy fabric since the agents started" \
  "records: $probes; localized: ${base:-none}" "$([[ -z $base && $probes != NA && $probes -gt 0 ]]; echo $?)"

# Busy hosts: CPU hogs beside the agents, for a bounded time (the agents'
# responders answer late or drop, on every flow of the hosts alike). That is
# host-side noise, not a broken link: nothing may be localized.
HOG_S=${E2E_HOG_S:-30}
hogs=()
for n in $(fabric_hosts | head -n 2); do
  for _ in 1 2; do
    ip netns exec "$(fabric_ns "$n")" timeout "$HOG_S" sh -c 'while :; do :; done' &
    hogs+=($!)
  done
done
wait "${hogs[@]}" 2>/dev/null || true
sleep $((WINDOW * 5 + 5))
busy=$(localized_ever)
e2e_result "busy-host baseline" "no localized link fault with CPU hogs beside two hosts' agents for ${HOG_S} s" \
  "localized: ${busy:-none}" "$([[ -z $busy ]]; echo $?)"
[[ -z $base && -z $busy ]] || { echo "e2e: healthy-fabric baseline paged; the scenarios below would be judged on a false page" >&2; }
drains=$(api /api/v1/drain | jq -c '[.actions[]? | "\(.op) \(.port)"]')
e2e_result "baselines drain nothing" "no drain action through the healthy and busy-host baselines (--drain-policy auto)" \
  "actions: ${drains:-?}" "$([[ $drains == "[]" ]]; echo $?)"

# --- 1. 3 % loss on one directed leaf->spine link --------------------------------

LOSS_NODE=leaf0; LOSS_PORT=swp3
LOSS_LINK="$LOSS_NODE:$LOSS_PORT->${FAB_PEER[$LOSS_NODE:$LOSS_PORT]}"
fabric_loss_add "$LOSS_NODE" "$LOSS_PORT" 3
FAULT_AT=$(date +%s.%N)
t=$SECONDS; seen=""; found=""
while ((SECONDS - t < LOCATE_DEADLINE)); do
  report=$(locate_json)
  seen=$(localized_links <<<"$report" | tr '\n' ';')
  if [[ $seen == "link_loss $LOSS_LINK;" || $seen == "link_corruption $LOSS_LINK;" ]]; then found=$((SECONDS - t)); break; fi
  sleep 3
done
e2e_result "loss located" "locate --json names exactly $LOSS_LINK (link_loss) within ${LOCATE_DEADLINE} s" \
  "${found:+after $found s: }${seen:-nothing localized}" "$([[ -n $found ]]; echo $?)"
# What held it, for the log: every incident with its summary.
[[ -n $found ]] || all_incidents | jq -c '.incidents[]? | {id, kind, link, opened_at, localized_at,
  resolved_at, candidates, summary: .evidence.summary}' >&2

# 1a. --drain-policy auto drains it: leaf0's agent shuts the port's BGP
# session, leaf0 routes over its other uplink only, the loss is gone.
LOSS_REV=$(reverse_link "$LOSS_LINK")
drained_json() { api /api/v1/drain | jq -c --arg a "$LOSS_LINK" --arg b "$LOSS_REV" '[.drained[]? | select(.link == $a or .link == $b)] | first // {}'; }
t=$SECONDS; drain='{}'
while ((SECONDS - t < 120)); do
  drain=$(drained_json)
  [[ $(jq -r '.state // ""' <<<"$drain") =~ ^(drained|failed)$ ]] && break
  sleep 1
done
e2e_result "loss drained" "the analyzer drains $LOSS_LINK (auto) and leaf0's agent reports it done, within 120 s of localizing it" \
  "$(jq -r '"\(.state // "no drain") \(.port // "") by \(.by // "-") \(.detail // "")"' <<<"$drain")" \
  "$([[ $(jq -r '.state // ""' <<<"$drain") == drained ]]; echo $?)"
DRAINED_AT=$(date +%s.%N)
other_leaf_prefix() { local h a; h=$(fabric_hosts | while read -r x; do p=$(fabric_ports "$x" | head -n1); [[ ${FAB_PEER[$x:$p]%%:*} != "$LOSS_NODE" ]] && { echo "$x"; break; }; done); a=$(fabric_host_addr "$h"); echo "${a%.*}.$(( ${a##*.} & ~1 ))/31"; }
PREFIX=$(other_leaf_prefix)
session=$(fabric_vtysh "$LOSS_NODE" "show bgp neighbors $LOSS_PORT" 2>&1 | grep -m1 -o 'BGP state = [A-Za-z]*' || true)
paths=$(fabric_paths "$LOSS_NODE" "$PREFIX")
# The graceful-shutdown marks (drain_graceful_s) stay on the session.
gshut_marks() { fabric_vtysh "$1" "show running-config" 2>&1 | grep -c "neighbor $2 route-map NETDIAG-GSHUT-" || true; }
marks=$(gshut_marks "$LOSS_NODE" "$LOSS_PORT")
e2e_result "drain on the switch" "$LOSS_NODE's BGP session on $LOSS_PORT is down after its graceful-shutdown marks (2 route-maps) and it routes $PREFIX over 1 path (was 2)" \
  "${session:-no session state}, $marks mark(s), $paths path(s)" "$([[ $session == "BGP state = Idle" && $marks == 2 && $paths == 1 ]]; echo $?)"
# The hosts' probe loss over the next 5 windows, from their agents' counters.
probe_totals() { local s=0 l=0 n v; for n in $(fabric_hosts); do v=$(agent_metric "$n" netdiag_agent_probes_sent_total); [[ $v =~ ^[0-9]+$ ]] && s=$((s + v)); v=$(agent_metric "$n" netdiag_agent_probes_lost_total); [[ $v =~ ^[0-9]+$ ]] && l=$((l + v)); done; echo "$s $l"; }
sleep "$WINDOW"  # probes of the window the drain fell in are settled
read -r s0 l0 < <(probe_totals)
sleep $((WINDOW * 5))
read -r s1 l1 < <(probe_totals)
RESOLVED_AT=$(date +%s.%N)
lossy=$(awk -v s=$((s1 - s0)) -v l=$((l1 - l0)) 'BEGIN { if (s <= 0) print "NA"; else printf "%.5f", l / s }')
e2e_result "loss gone after the drain" "hosts' probe loss at most 0.1 % over the 5 windows after the drain (3 % on the link before)" \
  "$((l1 - l0)) lost of $((s1 - s0)) ($lossy)" "$(awk -v r="$lossy" 'BEGIN { exit !(r != "NA" && r <= 0.001) }'; echo $?)"
# Six passes after the drain it is judged: no new loss in its scope, so the
# drain and its incident are mitigated (the incident stays open while the
# link is out: silence there is not a repair).
# (The engine takes the verdict at its next pass: the incident follows.)
mitigated_incident() { all_incidents | jq -c --arg l "$LOSS_LINK" '[.incidents[]? | select(.link == $l and .localized_at != null)] | first | {id, mitigated_at, resolved_at}'; }
t=$SECONDS; state=""; mit=""
while ((SECONDS - t < 90)); do
  state=$(drained_json | jq -r '.state // ""')
  mit=$(mitigated_incident)
  [[ $state == mitigated ]] && jq -e '.mitigated_at != null' <<<"$mit" >/dev/null && break
  sleep 2
done
e2e_result "drain mitigated" "the drain is judged mitigated within 90 s, its incident open with mitigated_at" \
  "drain ${state:-?}; incident $mit" \
  "$([[ $state == mitigated ]] && jq -e '.mitigated_at != null and .resolved_at == null' <<<"$mit" >/dev/null; echo $?)"
inc=$(all_incidents | jq -c --arg l "$LOSS_LINK" '[.incidents[]? | select(.link == $l and .localized_at != null)] | first // {}')
timeline=$(jq -r --argjson f "$FAULT_AT" --argjson d "$DRAINED_AT" --argjson r "$RESOLVED_AT" \
  '"detect \((.opened_at // 0) - $f | floor) s, localize \((.localized_at // 0) - $f | floor) s, drained \($d - $f | floor) s, resolved \($r - $f | floor) s"' <<<"$inc")
echo "timeline: $timeline (Xingmai: 60 / 180 / 300 s)" | tee -a "$FABRIC_RUN/timeline.txt"
resolved_s=$(awk -v r="$RESOLVED_AT" -v f="$FAULT_AT" 'BEGIN { printf "%d", r - f }')
e2e_result "drain timeline" "resolved (drained, loss back to background) within 300 s of the fault" \
  "$timeline" "$([[ $resolved_s -le 300 ]]; echo $?)"

fabric_loss_del "$LOSS_NODE" "$LOSS_PORT"
LOSS_REMOVED_AT=$SECONDS
# Repaired: `netdiag drain undo` restores the session and ECMP width.
undo=$(in_mgmt "$NETDIAG" drain undo "$LOSS_LINK" --analyzer "$API" --token-file "$API_TOKEN" --by e2e 2>&1)
t=$SECONDS; left=""
while ((SECONDS - t < 60)); do
  left=$(drained_json)
  [[ $left == '{}' ]] && break
  sleep 1
done
restored=1; [[ $left == '{}' ]] && fabric_wait_ecmp 60 >/dev/null && restored=0
# The restore waited for clean counters: requested, then restoring.
waited=$(api /api/v1/drain | jq -r --arg a "$LOSS_LINK" --arg b "$LOSS_REV" \
  '[.events[]? | select(.link == $a or .link == $b) | .event] | reverse | map(select(. == "restore_requested" or . == "restoring")) | join(",")')
((restored == 0)) && [[ $waited == restore_requested,restoring* ]] || restored=1
marks=$(gshut_marks "$LOSS_NODE" "$LOSS_PORT")
[[ $marks == 0 ]] || restored=1
e2e_result "drain undone" "netdiag drain undo: once the counters are clean (restore_requested, then restoring) the session comes back, its graceful-shutdown marks lifted, and every leaf has its ECMP width again" \
  "$undo; audit: ${waited:-none}; marks left: $marks; $(if [[ $left == '{}' ]]; then echo "restored after $((SECONDS - t)) s"; else echo "still: ${left}"; fi)" "$restored"
# Its resolution is checked after scenarios 2 and 3, which run on other
# leaves meanwhile: the engine weighs evidence over a horizon (180 s by
# default, no flag), so a link_loss resolves about horizon + resolve-after
# after the fault ends.

# --- 1c. approve: pod 1's drains wait for a person --------------------------------

# 3 % loss on leaf1's uplink to spine1 (pod 1, approve): the decision waits
# for approval and nothing is drained until `netdiag drain approve`; then
# leaf1's agent shuts the session. (Before step 2: a link whose carrier
# changed within the horizon explains the loss on it as flapping.)
link_json() {  # link: netdiag's drain of it (either direction), held or restored
  api /api/v1/drain | jq -c --arg a "$1" --arg b "$(reverse_link "$1")" \
    '[(.drained[]?, .restored[]?) | select(.link == $a or .link == $b)] | first // {}'
}
decision_for() {  # link verdict: the newest such decision event
  api /api/v1/drain | jq -c --arg a "$1" --arg b "$(reverse_link "$1")" --arg v "$2" \
    '[.events[]? | select(.event == "decision" and (.link == $a or .link == $b) and .detail.verdict == $v)] | first // empty'
}
APPROVE_LINK="leaf1:swp4->${FAB_PEER[leaf1:swp4]}"
fabric_loss_add leaf1 swp4 3
t=$SECONDS; waiting=""
while ((SECONDS - t < 120)); do
  waiting=$(decision_for "$APPROVE_LINK" await_approval)
  [[ -n $waiting ]] && break
  sleep 2
done
approve_inc=$(jq -r '.incident // ""' <<<"${waiting:-null}")
early=$(api /api/v1/drain | jq -r '[.actions[]? | select(.port == "leaf1:swp4")] | length')
approved=$([[ -n $approve_inc ]] && in_mgmt "$NETDIAG" drain approve "$approve_inc" --analyzer "$API" \
  --token-file "$API_TOKEN" --by e2e 2>&1)
t=$SECONDS; drain='{}'
while ((SECONDS - t < 60)); do
  drain=$(link_json "$APPROVE_LINK")
  [[ $(jq -r '.state // ""' <<<"$drain") =~ ^(drained|mitigated|failed)$ ]] && break
  sleep 1
done
session=$(fabric_vtysh leaf1 "show bgp neighbors swp4" 2>&1 | grep -m1 -o 'BGP state = [A-Za-z]*' || true)
e2e_result "drain approved" "pod 1 waits (await_approval, no action) until netdiag drain approve; then leaf1 shuts swp4's session" \
  "${approve_inc:-no await_approval decision}; actions before approval: ${early:-?}; ${approved:-not approved}; drain $(jq -r '.state // "none"' <<<"$drain"); ${session:-no session state}" \
  "$([[ -n $approve_inc && $early == 0 && $(jq -r '.state // ""' <<<"$drain") =~ ^(drained|mitigated)$ && $session == "BGP state = Idle" ]]; echo $?)"
fabric_loss_del leaf1 swp4
in_mgmt "$NETDIAG" drain undo "$APPROVE_LINK" --analyzer "$API" --token-file "$API_TOKEN" --by e2e >/dev/null 2>&1

# --- 1d. rollback: a drain of the wrong link is undone under auto --------------

# 3 % loss on leaf2's uplink to spine0 (pod 2, auto), with the policy frozen
# so it drains nothing itself; a person drains leaf2's other uplink for the
# incident instead (`netdiag drain link`). The incident's loss persists, so
# the drain is judged not mitigated and rolled back (restored).
in_mgmt "$NETDIAG" drain freeze on --analyzer "$API" --token-file "$API_TOKEN" --by e2e >/dev/null 2>&1
drains_before=$(api /api/v1/drain | jq -r '[.actions[]? | select(.op == "drain")] | length')
LOSSY="leaf2:swp3->${FAB_PEER[leaf2:swp3]}"; WRONG="leaf2:swp4->${FAB_PEER[leaf2:swp4]}"
fabric_loss_add leaf2 swp3 3
t=$SECONDS; rb_inc=""
while ((SECONDS - t < LOCATE_DEADLINE)); do
  rb_inc=$(locate_json | jq -r --arg l "$LOSSY" '[.incidents[]? | select(.link == $l and .localized_at != null) | .id] | first // ""')
  [[ -n $rb_inc ]] && break
  sleep 2
done
named=$([[ -n $rb_inc ]] && in_mgmt "$NETDIAG" drain link "$WRONG" --incident "$rb_inc" --analyzer "$API" \
  --token-file "$API_TOKEN" --by e2e 2>&1)
t=$SECONDS; wrong='{}'
while ((SECONDS - t < 150)); do
  wrong=$(link_json "$WRONG")
  [[ $(jq -r '.state // ""' <<<"$wrong") =~ ^(restored|mitigated|failed)$ ]] && break
  sleep 2
done
in_mgmt "$NETDIAG" drain freeze off --analyzer "$API" --token-file "$API_TOKEN" --by e2e >/dev/null 2>&1
fabric_loss_del leaf2 swp3
e2e_result "wrong drain rolled back" "$WRONG drained for ${rb_inc:-the incident on $LOSSY}, judged not mitigated (its loss persists) and restored (auto)" \
  "${rb_inc:-not localized}; ${named:-not drained}; drain $(jq -r '"\(.state // "none"): \(.detail // "")"' <<<"$wrong")" \
  "$([[ $(jq -r '.state // ""' <<<"$wrong") == restored && $(jq -r '.detail // ""' <<<"$wrong") == *"loss persists"*"$rb_inc"* ]]; echo $?)"
# The restore's own rerouting is no fault: nothing pages on the restored
# link and the policy, unfrozen, drains nothing more (CI once saw it drain
# the restored link again for the loss its restore made).
whole="ECMP complete"
fabric_wait_ecmp 60 >/dev/null 2>&1 || whole=$(_fabric_ecmp_mismatch)
drains_after=$(api /api/v1/drain | jq -r '[.actions[]? | select(.op == "drain")] | length')
e2e_result "fabric whole after the rollback" "every leaf has its ECMP width again within 60 s, and the only drain since the freeze is the one named for $rb_inc" \
  "$whole; drains since the freeze: $((drains_after - drains_before))" \
  "$([[ $whole == "ECMP complete" && $((drains_after - drains_before)) == 1 ]]; echo $?)"

# --- 2. one link down -------------------------------------------------------------

DOWN_NODE=leaf1; DOWN_PORT=swp4
DOWN_LINK="$DOWN_NODE:$DOWN_PORT->${FAB_PEER[$DOWN_NODE:$DOWN_PORT]}"
DOWN_REV=$(reverse_link "$DOWN_LINK")
before_ids=$(all_incidents | jq -r '.incidents[]?.id' | sort)
fabric_link_set "$DOWN_NODE" "$DOWN_PORT" down
t=$SECONDS; found=""
while ((SECONDS - t < 60)); do
  kinds=$(all_incidents | jq -r --arg a "$DOWN_LINK" --arg b "$DOWN_REV" \
    '.incidents[]? | select(.resolved_at == null and .kind == "link_down" and (.link == $a or .link == $b)) | .link')
  [[ -n $kinds ]] && { found=$((SECONDS - t)); break; }
  sleep 2
done
# Let traffic settle on the remaining paths, then look for anything else.
sleep $((WINDOW * 5))
others=$(all_incidents | jq -r --arg a "$DOWN_LINK" --arg b "$DOWN_REV" --arg before "$before_ids" \
  '($before | split("\n")) as $old | .incidents[]? | select((.id as $i | $old | index($i) | not)
   and .link != null and .link != $a and .link != $b) | "\(.kind) \(.link)"' | sort -u | tr '\n' ';')
e2e_result "link down located" "a link_down incident on $DOWN_LINK (either direction) within 60 s" \
  "$(if [[ -n $found ]]; then echo "after $found s on $(tr '\n' ' ' <<<"$kinds")"; else echo none; fi)" "$([[ -n $found ]]; echo $?)"
e2e_result "link down, nothing else" "no new incident on any other link (those traffic moved to)" \
  "${others:-none}" "$([[ -z $others ]]; echo $?)"

# 2b. Loss on leaf1's last usable uplink while the other is down: a drain
# would cut leaf1's hosts off, so the policy refuses it, with the reason in
# the audit and in `netdiag explain`, and nothing is drained.
LAST_PORT=swp3
LAST_LINK="$DOWN_NODE:$LAST_PORT->${FAB_PEER[$DOWN_NODE:$LAST_PORT]}"
fabric_loss_add "$DOWN_NODE" "$LAST_PORT" 3
t=$SECONDS; refused=""
while ((SECONDS - t < 90)); do
  refused=$(api /api/v1/drain | jq -c --arg l "$LAST_LINK" --arg r "$(reverse_link "$LAST_LINK")" \
    '[.events[]? | select(.event == "decision" and (.link == $l or .link == $r) and .detail.verdict == "refuse")] | first // empty')
  [[ -n $refused ]] && break
  sleep 2
done
[[ -n $refused ]] || refused='{}'
failing=$(jq -r '[.detail.checks[]? | select(.ok == false) | .name] | join(",")' <<<"$refused")
inc_id=$(jq -r '.incident // ""' <<<"$refused")
explained=$([[ -n $inc_id ]] && in_mgmt "$NETDIAG" explain "$inc_id" --analyzer "$API" 2>&1 | grep -m1 -o 'ecmp_width: .*' || true)
drained_any=$(api /api/v1/drain | jq -r --arg p "$DOWN_NODE:$LAST_PORT" '[.actions[]? | select(.op == "drain" and .port == $p)] | length')
e2e_result "last uplink refused" "the drain of $LAST_LINK is refused (ecmp_width) in the audit and explain, and it is not drained" \
  "${inc_id:-no decision}: failing ${failing:-?}; explain: ${explained:-nothing}; drains of $DOWN_NODE:$LAST_PORT: ${drained_any:-?}" \
  "$([[ $failing == *ecmp_width* && -n $explained && $drained_any == 0 ]]; echo $?)"
fabric_loss_del "$DOWN_NODE" "$LAST_PORT"

fabric_link_set "$DOWN_NODE" "$DOWN_PORT" up
fabric_wait_ecmp 30 >/dev/null
t=$SECONDS; open=""
while ((SECONDS - t < RESOLVE_AFTER + 60)); do
  open=$(locate_json | jq -r --arg a "$DOWN_LINK" --arg b "$DOWN_REV" '[.incidents[]? | select(.link == $a or .link == $b)] | length')
  [[ $open == 0 ]] && break
  sleep 3
done
e2e_result "link up resolved" "the link_down incident resolves once the link is back" \
  "open on the link: $open after $((SECONDS - t)) s" "$([[ $open == 0 ]]; echo $?)"

# --- 3. two cables swapped ----------------------------------------------------------

# leaf1's and leaf2's cables trade ports on spine1: each leaf keeps its
# other uplink meanwhile, and no path through the loss link (leaf0 ->
# spine0) sees the re-plug's transient loss, so its incident can resolve.
SWAP_X=spine1:swp2; SWAP_Y=spine1:swp3
SWAP_PORTS="$SWAP_X $SWAP_Y ${FAB_PEER[$SWAP_X]} ${FAB_PEER[$SWAP_Y]}"
fabric_swap_cables "$SWAP_X" "$SWAP_Y"
t=$SECONDS; found=""; mis=""
while ((SECONDS - t < 90)); do
  mis=$(locate_json | jq -c '[.incidents[]? | select(.kind == "miscabling") | .ports // []] | add // []')
  named=$(jq -r --arg want "$SWAP_PORTS" '($want | split(" ")) as $w | [.[] | select(. as $p | $w | index($p))] | unique | length' <<<"$mis")
  [[ $named -gt 0 ]] && { found=$((SECONDS - t)); break; }
  sleep 3
done
e2e_result "miscabling located" "a miscabling incident naming ports of the swap ($SWAP_PORTS) within 90 s" \
  "${found:+after $found s, }ports ${mis:-[]}" "$([[ -n $found ]]; echo $?)"
fabric_wait_ecmp 30 >/dev/null

# --- 1b. the loss incident resolves ------------------------------------------------

RESOLVE_DEADLINE=${E2E_LOSS_RESOLVE_DEADLINE:-$((180 + RESOLVE_AFTER + 60))}  # seconds after removal
open=""; resolved=""
while :; do
  open=$(locate_json | jq -r --arg l "$LOSS_LINK" '[.incidents[]? | select(.link == $l)] | length')
  resolved=$(all_incidents | jq -r --arg l "$LOSS_LINK" '[.incidents[]? | select(.link == $l and .resolved_at != null)] | length')
  [[ $open == 0 && $resolved =~ ^[0-9]+$ && $resolved -gt 0 ]] && break
  ((SECONDS - LOSS_REMOVED_AT >= RESOLVE_DEADLINE)) && break
  sleep 3
done
e2e_result "loss resolved" "no open incident on $LOSS_LINK and a resolved one, within $RESOLVE_DEADLINE s of removing the rule" \
  "open: ${open:-?}, resolved: ${resolved:-0}, $((SECONDS - LOSS_REMOVED_AT)) s after removal" \
  "$([[ $open == 0 && $resolved =~ ^[0-9]+$ && $resolved -gt 0 ]]; echo $?)"

# --- 4. analyzer outage (while still miscabled) ----------------------------------------

# The outage must find the miscabling settled: every swapped port named (the
# ends' LLDP agents re-learn their neighbours at their own pace). Otherwise
# what the analyzer learns during the outage changes the incidents, and
# that is news, not a lost incident.
t=$SECONDS
while ((SECONDS - t < 90)); do
  mis=$(locate_json | jq -c '[.incidents[]? | select(.kind == "miscabling") | .ports // []] | add // []')
  named=$(jq -r --arg want "$SWAP_PORTS" '($want | split(" ")) as $w | [.[] | select(. as $p | $w | index($p))] | unique | length' <<<"$mis")
  [[ $named -ge 4 ]] && break
  sleep 3
done
echo "miscabling settled before the outage: $named of 4 swapped ports named after $((SECONDS - t)) s"
snapshot() { all_incidents | jq -c '[.incidents[]? | {id, kind, link, node, ports, opened_at}] | sort_by(.id)'; }
inc_before=$(snapshot)
mis_before=$(locate_json | jq -c '[.incidents[]? | select(.kind == "miscabling") | .id] | sort')
declare -A acked0=() made_at_restart=()
kill -KILL "$ANALYZER_PID"
wait "$ANALYZER_PID" 2>/dev/null
echo "analyzer killed (SIGKILL); restarting in $OUTAGE s"
# Acknowledgements stop with the analyzer: count from here, once the
# agents' /metrics (refreshed as they batch) show the last ones.
sleep 3
for n in "${FAB_NODES[@]}"; do acked0[$n]=$(agent_metric "$n" netdiag_agent_uplink_batches_acked_total); done
sleep $((OUTAGE / 2))
down=$(in_mgmt curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$API/healthz")
alive=$(kill -0 "$ANALYZER_PID" 2>/dev/null && echo yes || echo no)
e2e_result "analyzer down" "no analyzer process, /healthz unreachable" "process alive: $alive, /healthz: $down" \
  "$([[ $alive == no && $down == 000 ]]; echo $?)"
spooled=0
for n in "${FAB_NODES[@]}"; do s=$(agent_metric "$n" netdiag_agent_spool_batches); [[ $s =~ ^[0-9]+$ ]] && spooled=$((spooled + s)); done
sleep $((OUTAGE - OUTAGE / 2))
for n in "${FAB_NODES[@]}"; do made_at_restart[$n]=$(agent_metric "$n" netdiag_agent_batches_total); done
start_analyzer; rc=$?
e2e_result "analyzer restart" "ready again after $OUTAGE s down; agents spooled meanwhile" \
  "ready rc $rc; $spooled batches in the agents' spools mid-outage" "$([[ $rc == 0 && $spooled -gt 0 ]]; echo $?)"

# Agents drain: every batch made up to the restart acknowledged, spools empty.
t=$SECONDS; pending=""
while ((SECONDS - t < 60)); do
  pending=""
  for n in "${FAB_NODES[@]}"; do
    a=$(agent_metric "$n" netdiag_agent_uplink_batches_acked_total); s=$(agent_metric "$n" netdiag_agent_spool_batches)
    [[ $a =~ ^[0-9]+$ && $a -ge ${made_at_restart[$n]} && $s =~ ^[0-9]+$ && $s -le 2 ]] || pending+="$n(acked $a of ${made_at_restart[$n]}, spool $s) "
  done
  [[ -z $pending ]] && break
  sleep 2
done
dropped=0; acked_delta=0
for n in "${FAB_NODES[@]}"; do
  d=$(agent_metric "$n" netdiag_agent_spool_dropped_total); [[ $d =~ ^[0-9]+$ ]] && dropped=$((dropped + d))
  a=$(agent_metric "$n" netdiag_agent_uplink_batches_acked_total)
  [[ $a =~ ^[0-9]+$ && ${acked0[$n]} =~ ^[0-9]+$ ]] && acked_delta=$((acked_delta + a - ${acked0[$n]}))
done
# The analyzer's counters are refreshed after each engine pass (5 s): give
# them time to include every batch acknowledged before the agents' scrape.
sleep 8
ib=$(analyzer_metric netdiag_ingest_batches_total); idup=$(analyzer_metric netdiag_ingest_duplicate_batches_total)
[[ $ib =~ ^[0-9]+$ ]] || ib=0; [[ $idup =~ ^[0-9]+$ ]] || idup=0
ingested=$((ib + idup))
e2e_result "no telemetry lost" "spools drained, 0 dropped, every batch acked; analyzer ingested >= batches acked since the kill" \
  "drained after $((SECONDS - t)) s, pending: ${pending:-none}; dropped $dropped; acked since kill $acked_delta, analyzer ingested $ingested" \
  "$([[ -z $pending && $dropped == 0 && $ingested -ge $acked_delta ]]; echo $?)"

inc_after=$(snapshot)
missing=$(jq -rn --argjson a "$inc_before" --argjson b "$inc_after" '$a - $b | map("\(.id) \(.kind)") | join(", ")')
# The miscabling persists through the outage: its incidents must go on as
# the same open incidents, not be resolved and opened anew.
mis_after=$(locate_json | jq -c '[.incidents[]? | select(.kind == "miscabling") | .id] | sort')
lost_open=$(jq -rn --argjson a "$mis_before" --argjson b "$mis_after" '$a - $b | join(", ")')
e2e_result "incidents survived" "all $(jq length <<<"$inc_before") incidents kept (id, kind, link, ports, opened_at); open miscabling ones $mis_before still open" \
  "changed or missing: ${missing:-none}; open miscabling after: $mis_after" \
  "$([[ -z $missing && -z $lost_open && $(jq length <<<"$inc_before") -gt 0 && $mis_before != "[]" ]]; echo $?)"

# Cables back: the miscabling resolves.
fabric_swap_cables "$SWAP_X" "$SWAP_Y"
fabric_wait_ecmp 30 >/dev/null
t=$SECONDS; open=""
while ((SECONDS - t < RESOLVE_AFTER + 60)); do
  open=$(locate_json | jq -r '[.incidents[]? | select(.kind == "miscabling")] | length')
  [[ $open == 0 ]] && break
  sleep 3
done
e2e_result "miscabling resolved" "no open miscabling once the cables are back" \
  "open: $open after $((SECONDS - t)) s" "$([[ $open == 0 ]]; echo $?)"

# --- 4b. hostile drain actions: refused and counted -------------------------------

# leaf0's agent, restarted against a rogue analyzer (netdiag_rogue_analyzer,
# test-only) that speaks the agent protocol and holds the real drain key,
# gets on its first ack: a drain of its own port signed with another key,
# one unsigned, one expired a minute ago, one for spine0's port, and a
# restore of its own (up) session followed by its replay. The agent
# carries out the restore only (a no-op on an up session), refuses and
# counts the rest by reason, and leaf0 keeps every route.
ROGUE=${NETDIAG_ROGUE_ANALYZER:-$(dirname "$NETDIAG")/../tests/e2e/netdiag_rogue_analyzer}
ROGUE_PORT=7602
HOSTILE_WANT="foreign=refused:not_own_port forged=refused:bad_mac replayed=refused:replayed stale=refused:expired unsigned=refused:bad_mac valid=done:"
if [[ -x $ROGUE ]]; then
  snmp_kill_pidfiles "$FABRIC_RUN/agent-leaf0.pid"
  in_mgmt "$ROGUE" --listen "$MGMT:$ROGUE_PORT" --agent leaf0 --key "$DRAIN_KEY" --own leaf0:swp3 \
    --foreign spine0:swp1 --monitored leaf0:swp3,leaf0:swp4 >"$FABRIC_RUN/rogue.out" 2>"$FABRIC_RUN/rogue.log" &
  rogue_pid=$!
  uplink=("${AGENT_UPLINK[@]}")
  AGENT_UPLINK=(--analyzer "$MGMT:$ROGUE_PORT")
  start_agent leaf0
  AGENT_UPLINK=("${uplink[@]}")
  t=$SECONDS
  while ((SECONDS - t < 60)) && kill -0 "$rogue_pid" 2>/dev/null; do sleep 1; done
  kill "$rogue_pid" 2>/dev/null; wait "$rogue_pid" 2>/dev/null
  hostile=$(awk '$1 == "result" { print $2 "=" $3 ":" $4 }' "$FABRIC_RUN/rogue.out" | sort | tr '\n' ' ')
  # The agent's own count, by result and reason (it started at 0).
  counted=""
  t=$SECONDS
  while ((SECONDS - t < 15)); do
    counted=$(fabric_exec leaf0 curl -sf --max-time 3 "http://127.0.0.1:$AGENT_METRICS_PORT/metrics" |
      awk 'index($1, "netdiag_agent_drain_actions_total{") == 1 && $2 + 0 > 0 &&
           match($1, /reason="[^"]*"/) { r = substr($1, RSTART + 8, RLENGTH - 9);
           match($1, /result="[^"]*"/); print substr($1, RSTART + 8, RLENGTH - 9) ":" r "=" $2 + 0 }' |
      sort | tr '\n' ' ')
    [[ $counted == *refused:bad_mac=2* ]] && break
    sleep 1
  done
  routes="ECMP complete"
  fabric_wait_ecmp 20 >/dev/null 2>&1 || routes=$(_fabric_ecmp_mismatch)
  snmp_kill_pidfiles "$FABRIC_RUN/agent-leaf0.pid"
  start_agent leaf0
  e2e_result "hostile actions refused" "leaf0's agent refuses a forged, an unsigned, a stale, a foreign-port and a replayed action and counts each by reason; it does the one valid restore; every route stays" \
    "results: ${hostile:-none}; counted: ${counted:-nothing}; $routes" \
    "$([[ "$hostile" == "$HOSTILE_WANT " && $counted == "done:=1 refused:bad_mac=2 refused:expired=1 refused:not_own_port=1 refused:replayed=1 " && $routes == "ECMP complete" ]]; echo $?)"
else
  e2e_result "hostile actions refused" "the rogue analyzer to send them ($ROGUE)" "not built" 1
fi

# --- 5. SNMP only: the switches run no netdiag agent, only snmpd ----------------

# The switches become what most fabrics offer: no agent, only snmpd, with
# lldpd as its AgentX subagent for LLDP-MIB. `netdiag poll snmp` in nd-mgmt
# polls them (IF-MIB every 2 s, lldpRemTable every 2 s; spines over SNMPv3
# authPriv, leaves over v2c) and streams port and lldp records as
# $SNMP_POLLER_ID; the hosts keep their agents (probes). The faults go on
# links step 4's swap-back left alone: it flapped spine1:swp2/swp3 and
# leaf1:swp4/leaf2:swp4 within the horizon, where two more carrier changes
# would rightly read as link_flap. For the same reason the link taken down
# and the cables swapped are links no other step flapped.
SNMP_IDS_BEFORE=$(all_incidents | jq -r '.incidents[]?.id' | sort)
t=$SECONDS
pidfiles=()
for n in $(fabric_switches); do pidfiles+=("$FABRIC_RUN/agent-$n.pid" "$FABRIC_RUN/lldpd-$n/lldpd.pid"); done
snmp_kill_pidfiles "${pidfiles[@]}"
left=""
for n in $(fabric_switches); do
  for p in $(ip netns pids "$(fabric_ns "$n")" 2>/dev/null); do
    c=$(cat "/proc/$p/comm" 2>/dev/null); [[ $c == netdiag || $c == lldpd ]] && left+="$n:$c "
  done
done
rc=1
if [[ -z $left ]] && snmp_start_snmpd && snmp_start_lldpd && snmp_wait 60; then
  if snmp_write_poller_config "$FABRIC_RUN/poller.yaml"; then
    # ip netns exec execs the poller: $! is the poller itself.
    ip netns exec "$FABRIC_MGMT_NS" "$NETDIAG" poll snmp --config "$FABRIC_RUN/poller.yaml" \
      --analyzer "$MGMT:$GRPC_PORT" --topology "$TOPO" --metrics-address "127.0.0.1:$POLLER_METRICS_PORT" \
      >>"$FABRIC_RUN/poller.log" 2>&1 &
    echo $! >"$FABRIC_RUN/poller.pid"
    rc=0
  fi
fi
# Ready: every target answered its last poll, and the analyzer holds the
# poller's stream and takes its records.
switches=$(fabric_switches | sort | tr '\n' ' ')
up=""; precs=NA
while ((rc == 0 && SECONDS - t < 60)); do
  up=$(snmp_targets_up | tr '\n' ' ')
  precs=$(analyzer_metric "netdiag_agent_records{agent=\"$SNMP_POLLER_ID\"}")
  [[ $up == "$switches" && $(analyzer_metric "netdiag_agent_connected{agent=\"$SNMP_POLLER_ID\"}") == 1 &&
     $precs =~ ^[0-9]+$ && $precs -gt 0 ]] && break
  sleep 1
done
# --collectors lets it speak for the switches: none of its records refused.
refused=$(analyzer_metric "netdiag_agent_rejected_records{agent=\"$SNMP_POLLER_ID\",reason=\"not_authorized\"}")
e2e_result "snmp only" "switch agents and lldpd stopped; snmpd + AgentX lldpd up; poller target_up 1 for $switches; analyzer takes its records, refuses none" \
  "after $((SECONDS - t)) s: left running: ${left:-none}; target_up 1: ${up:-none}; records from $SNMP_POLLER_ID: $precs, not authorized: $refused" \
  "$([[ $rc == 0 && $up == "$switches" && $precs =~ ^[0-9]+$ && $precs -gt 0 && ($refused == 0 || $refused == NA) ]]; echo $?)"

# 5a. Loss on a spine->leaf link: nothing in any counter shows it, the
# hosts' probes alone. First, and through spine0: a link with a carrier
# change within the horizon explains every loss on flows through it, and
# every flow through spine1 crosses a link step 4's swap-back flapped.
S_LOSS_NODE=spine0; S_LOSS_PORT=swp3
S_LOSS_LINK="$S_LOSS_NODE:$S_LOSS_PORT->${FAB_PEER[$S_LOSS_NODE:$S_LOSS_PORT]}"
fabric_loss_add "$S_LOSS_NODE" "$S_LOSS_PORT" 3
t=$SECONDS; seen=""; found=""
while ((SECONDS - t < LOCATE_DEADLINE)); do
  seen=$(locate_json | localized_links | tr '\n' ';')
  if [[ $seen == "link_loss $S_LOSS_LINK;" || $seen == "link_corruption $S_LOSS_LINK;" ]]; then found=$((SECONDS - t)); break; fi
  sleep 3
done
e2e_result "snmp: loss located" "locate --json names exactly $S_LOSS_LINK (link_loss) within ${LOCATE_DEADLINE} s, from host probes alone" \
  "${found:+after $found s: }${seen:-nothing localized}" "$([[ -n $found ]]; echo $?)"
fabric_loss_del "$S_LOSS_NODE" "$S_LOSS_PORT"


# 5b. A leaf-spine link down, seen in ifOperStatus. SNMP reports it 2-5 s
# late (the poll interval, and snmpd's ~3 s interface cache): the probes'
# loss reaches the engine a pass before the down does.
S_DOWN_NODE=leaf1; S_DOWN_PORT=swp3
S_DOWN_LINK="$S_DOWN_NODE:$S_DOWN_PORT->${FAB_PEER[$S_DOWN_NODE:$S_DOWN_PORT]}"
S_DOWN_REV=$(reverse_link "$S_DOWN_LINK")
S_DOWN_AT=$(date +%s)
fabric_link_set "$S_DOWN_NODE" "$S_DOWN_PORT" down
t=$SECONDS; found=""; kinds=""
while ((SECONDS - t < 60)); do
  kinds=$(all_incidents | jq -r --arg a "$S_DOWN_LINK" --arg b "$S_DOWN_REV" \
    '.incidents[]? | select(.resolved_at == null and .kind == "link_down" and (.link == $a or .link == $b)) | .link')
  [[ -n $kinds ]] && { found=$((SECONDS - t)); break; }
  sleep 2
done
e2e_result "snmp: link down located" "a link_down incident on $S_DOWN_LINK (either direction) within 60 s, from SNMP alone" \
  "$(if [[ -n $found ]]; then echo "after $found s on $(tr '\n' ' ' <<<"$kinds")"; else echo none; fi)" "$([[ -n $found ]]; echo $?)"
# Down for two more engine passes, as traffic moves to the other paths
# (what that pages is checked at the end).
wait_passes 2 30
S_UP_AT=$(date +%s)
fabric_link_set "$S_DOWN_NODE" "$S_DOWN_PORT" up
fabric_wait_ecmp 30 >/dev/null
t=$SECONDS; open=""
while ((SECONDS - t < RESOLVE_AFTER + 60)); do
  open=$(locate_json | jq -r --arg a "$S_DOWN_LINK" --arg b "$S_DOWN_REV" '[.incidents[]? | select(.link == $a or .link == $b)] | length')
  [[ $open == 0 ]] && break
  sleep 3
done
e2e_result "snmp: link up resolved" "the link_down incident resolves once ifOperStatus is up again" \
  "open on the link: $open after $((SECONDS - t)) s" "$([[ $open == 0 ]]; echo $?)"

# 5c. Two cables swapped at spine0, seen in lldpRemTable on both ends. The
# cables stay swapped: swapping back within the horizon would flap the four
# ports twice.
S_SWAP_X=spine0:swp1; S_SWAP_Y=spine0:swp3
S_SWAP_PORTS="$S_SWAP_X $S_SWAP_Y ${FAB_PEER[$S_SWAP_X]} ${FAB_PEER[$S_SWAP_Y]}"
fabric_swap_cables "$S_SWAP_X" "$S_SWAP_Y"
t=$SECONDS; first=""; found=""; mis=""; named=0
while ((SECONDS - t < 90)); do
  mis=$(locate_json | jq -c '[.incidents[]? | select(.kind == "miscabling") | .ports // []] | add // []')
  named=$(jq -r --arg want "$S_SWAP_PORTS" '($want | split(" ")) as $w | [.[] | select(. as $p | $w | index($p))] | unique | length' <<<"$mis")
  [[ $named -gt 0 && -z $first ]] && first=$((SECONDS - t))
  [[ $named -ge 4 ]] && { found=$((SECONDS - t)); break; }
  sleep 3
done
e2e_result "snmp: miscabling located" "a miscabling incident naming all four ports of the swap ($S_SWAP_PORTS) within 90 s, from LLDP-MIB" \
  "${first:+first after $first s, }${found:+all after $found s, }ports ${mis:-[]}" "$([[ -n $found ]]; echo $?)"

# Nothing else paged since the switch agents stopped: every new localized
# incident is one of the faults above (link_down on the link taken down,
# loss on the loss link, miscabling among the swapped ports, and link_down
# on the swapped cables: snmpd's interface cache can hold a re-plug's 0.2 s
# down for a poll or two), also two engine passes after the swap. Candidates never localized are listed, not
# failed: SNMP's late link state leaves some (see 5a). The poller still
# reaches every switch.
wait_passes 2 30
new_incidents=$(all_incidents | jq -c --arg before "$SNMP_IDS_BEFORE" \
  '($before | split("\n")) as $old | [.incidents[]? | select(.id as $i | $old | index($i) | not)]')
others=$(jq -r --arg down "$S_DOWN_LINK" --arg rev "$S_DOWN_REV" --arg loss "$S_LOSS_LINK" --arg swap "$S_SWAP_PORTS" '
  ($swap | split(" ")) as $w | .[] | select(.localized_at != null)
  | select(((.kind == "link_down" and (.link == $down or .link == $rev))
            or ((.kind == "link_loss" or .kind == "link_corruption") and .link == $loss)
            or (.kind == "miscabling" and ((.ports // []) - $w | length) == 0)
            or (.kind == "link_down" and ((.link // "") | split("->") - $w | length) == 0)) | not)
  | "\(.kind) \(.link // .node // (.ports | tostring))"' <<<"$new_incidents" | sort -u | tr '\n' ';')
candidates=$(jq -r '.[] | select(.localized_at == null) | "\(.kind) \(.link // .node // (.ports | tostring))"' <<<"$new_incidents" | sort -u | tr '\n' ';')
up=$(snmp_targets_up | tr '\n' ' ')
e2e_result "snmp: nothing else" "no other incident localized since the switchover; target_up 1 for every switch at the end" \
  "$(jq length <<<"$new_incidents") new; others localized: ${others:-none}; not localized: ${candidates:-none}; target_up 1: ${up:-none}" \
  "$([[ -z $others && $up == "$switches" ]]; echo $?)"

# What a failure needs to be understood: the others' times against the
# link's down (at 0) and up, and what they were paged on.
if [[ -n $others ]]; then
  echo "link down at 0, up at $((S_UP_AT - S_DOWN_AT)) s; incidents since the switchover, times from the down:"
  jq -c --argjson t0 "$S_DOWN_AT" '.[] | select(.localized_at != null) | {id, kind, link, ports,
    opened: (.opened_at - $t0 | floor), localized: (.localized_at - $t0 | floor),
    resolved: (if .resolved_at then .resolved_at - $t0 | floor else null end),
    confidence, summary: .evidence.summary}' <<<"$new_incidents"
fi
echo "final open incidents: $(locate_json | jq -c '[.incidents[]? | {kind, link, ports}]')"
e2e_summary
