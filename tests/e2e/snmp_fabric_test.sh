#!/usr/bin/env bash
# Checks the SNMP parts of the namespaced fabric (no netdiag binaries
# needed), so that a failure of the SNMP-only e2e scenario can be told apart
# from broken test infrastructure: lib/snmp.sh starts snmpd in every switch
# namespace and lldpd as its AgentX subagent; from the management namespace,
# as the poller will, it checks v2c and SNMPv3 authPriv (and that a wrong
# passphrase is refused), ifName naming every port, lldpRemTable naming the
# cabled neighbours, a link down seen in ifOperStatus/ifLastChange and
# lldpRemTable, a swapped cable seen in lldpRemTable, and an snmpd restart
# (sysUpTime back near 0, snmpEngineBoots + 1, same engine ID).
# Exit 0 pass, 1 fail, 77 skip (no root / netns / FRR / lldpd / snmpd).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib/fabric.sh"
source "$HERE/lib/testlib.sh"
source "$HERE/lib/snmp.sh"

e2e_require_fabric
missing=$(snmp_missing)
[[ -z $missing ]] || e2e_skip "not installed: $missing"
e2e_lock
fabric_use_run_prefix
FABRIC_RUN=$(mktemp -d /tmp/nd-snmp-test.XXXXXX)
cleanup() {
  snmp_stop
  fabric_teardown
  if ((E2E_FAILED)); then echo "logs kept in $FABRIC_RUN (snmp-*/snmpd.log, lldpd-*/lldpd.log)"; else rm -rf "$FABRIC_RUN"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fabric_load "$HERE/fabric.yaml" || exit 1
for ns in $(fabric_namespaces); do
  [[ -e /run/netns/$ns ]] && { echo "NOTE: removing leftovers of an earlier run"; fabric_teardown; break; }
done

# 1. Build: routed fabric, snmpd + AgentX lldpd on every switch.
t=$SECONDS
if fabric_create && fabric_start_frr && snmp_start_snmpd && snmp_start_lldpd && fabric_wait_ecmp 60 && snmp_wait 60; then
  e2e_result "build" "snmpd answers ifName, lldpRemTable as cabled, on $(fabric_switches | wc -l) switches" "after $((SECONDS - t)) s" 0
else
  e2e_result "build" "snmpd and lldpd (AgentX) up on every switch" "setup failed (see above)" 1
  exit 1
fi

V3=$(fabric_nodes_with_role spine | head -n1); V2=$(fabric_nodes_with_role leaf | head -n1)
mgmt() { ip netns exec "$FABRIC_MGMT_NS" "$@"; }
get() {  # node oid...: values, one a line
  local n=$1; shift
  # shellcheck disable=SC2046
  mgmt snmpget $(snmp_auth_args "$(snmp_version "$n")") -On -Oqv -t 1 -r 1 "$(snmp_target "$n")" "$@" 2>&1
}

# 2. Credentials: the poller's versions work, a wrong v3 passphrase does not.
seen="v$(snmp_version "$V3") $V3 sysName=$(get "$V3" .1.3.6.1.2.1.1.5.0), v$(snmp_version "$V2") $V2 sysName=$(get "$V2" .1.3.6.1.2.1.1.5.0)"
bad=$(mgmt snmpget -v3 -l authPriv -u "$SNMP_V3_USER" -a SHA -A wrong-passphrase -x AES -X "$SNMP_V3_PRIV_PASS" \
  -t 1 -r 0 "$(snmp_target "$V3")" .1.3.6.1.2.1.1.5.0 2>&1)
e2e_result "credentials" "$V3 over v3 authPriv, $V2 over v2c; a wrong auth passphrase refused" "$seen; wrong: $bad" \
  "$([[ $seen == "v3 $V3 sysName=\"$V3\", v2c $V2 sysName=\"$V2\"" && $bad == *"Authentication failure"* ]]; echo $?)"

# 3. ifName names every port: the poller maps interfaces by it.
ok=0; seen=""
for n in $(fabric_switches); do
  names=$(snmp_walk "$n" "$SNMP_OID_IFNAME" | awk '{ gsub(/"/, "", $2); print $2 }' | sort -V | tr '\n' ' ')
  want="$(fabric_ports "$n" | tr '\n' ' ')"
  for p in $want; do [[ " $names " == *" $p "* ]] || { ok=1; seen+="$n lacks $p; "; }; done
done
e2e_result "ifName" "every switch port listed by name" "${seen:-all present (e.g. $V2: $(snmp_walk "$V2" "$SNMP_OID_IFNAME" | awk '{ gsub(/"/, "", $2); printf "%s ", $2 }'))}" "$ok"

# 4. Link down: ifOperStatus down(2), ifLastChange moves, the neighbour leaves
#    lldpRemTable; back up, all returns.
node=$V2; port=$(fabric_ports "$node" | tail -n1)
idx=$(snmp_walk "$node" "$SNMP_OID_IFNAME" | awk -v p="\"$port\"" '$2 == p { n = split($1, a, "."); print a[n] }')
lc0=$(get "$node" ".1.3.6.1.2.1.2.2.1.9.$idx")
t0=$EPOCHREALTIME
fabric_link_set "$node" "$port" down
st=""; for _ in $(seq 1 40); do st=$(get "$node" ".1.3.6.1.2.1.2.2.1.8.$idx"); [[ $st == 2 ]] && break; sleep 0.25; done
dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
lc1=$(get "$node" ".1.3.6.1.2.1.2.2.1.9.$idx")
gone=1; for _ in $(seq 1 40); do snmp_lldp_neighbors "$node" | grep -q "^$port " || { gone=0; break; }; sleep 0.25; done
e2e_result "link down" "$node:$port ifOperStatus 2 within 10 s, ifLastChange moves, its lldpRemTable row gone" \
  "ifOperStatus $st after $dt s, ifLastChange $lc0 -> $lc1, row gone: $([[ $gone == 0 ]] && echo yes || echo no)" \
  "$([[ $st == 2 && $lc1 != "$lc0" && $gone == 0 ]]; echo $?)"
fabric_link_set "$node" "$port" up
t=$SECONDS; snmp_wait 30; rc=$?
e2e_result "link up" "lldpRemTable as cabled again within 30 s" "after $((SECONDS - t)) s" "$rc"

# 5. A swapped cable shows in lldpRemTable at both spine ports.
X=spine1:swp2; Y=spine1:swp3
fabric_swap_cables "$X" "$Y"
t=$SECONDS; snmp_wait 30; rc=$?
seen=$(snmp_lldp_neighbors spine1 | grep -E '^swp[23] ' | tr '\n' ',')
e2e_result "cable swap" "spine1 lldpRemTable swp2->${FAB_PEER[$X]}, swp3->${FAB_PEER[$Y]}" "after $((SECONDS - t)) s: $seen" \
  "$([[ $rc == 0 && $seen == "swp2 ${FAB_PEER[$X]},swp3 ${FAB_PEER[$Y]}," ]]; echo $?)"
fabric_swap_cables "$X" "$Y"
snmp_wait 30 >/dev/null 2>&1

# 6. snmpd restart (a switch reboot as SNMP sees it): sysUpTime back to ~0,
#    snmpEngineBoots + 1 with the same snmpEngineID (v3 pollers rely on both).
engine_id() { get "$1" .1.3.6.1.6.3.10.2.1.1.0 | tr -d '" \n'; }   # a Hex-STRING over lines
id0=$(engine_id "$V3"); boots0=$(get "$V3" .1.3.6.1.6.3.10.2.1.2.0)
snmp_stop_snmpd "$V3"; snmp_start_snmpd "$V3" >/dev/null 2>&1
up1=$(get "$V3" .1.3.6.1.2.1.1.3.0); id1=$(engine_id "$V3"); boots1=$(get "$V3" .1.3.6.1.6.3.10.2.1.2.0)
t=$SECONDS; snmp_wait 40 "$V3"; rc=$?
e2e_result "snmpd restart" "$V3: same engine ID, boots +1, sysUpTime < 5 s; lldpRemTable back (lldpd re-registers within 15 s)" \
  "engine ID $([[ $id0 == "$id1" ]] && echo same || echo "$id0 -> $id1"), boots $boots0 -> $boots1, sysUpTime $up1; lldpRemTable back after $((SECONDS - t)) s" \
  "$([[ -n $id0 && $id0 == "$id1" && $boots0 =~ ^[0-9]+$ && $boots1 == $((boots0 + 1)) && $up1 =~ ^0:0:00:0[0-4] && $rc == 0 ]]; echo $?)"

# 7. Stop leaves no snmpd or AgentX lldpd.
pids=""; for n in $(fabric_switches); do for f in "$(snmp_dir "$n")/snmpd.pid" "$FABRIC_RUN/lldpd-$n/lldpd.pid"; do [[ -s $f ]] && pids+="$(<"$f") "; done; done
snmp_stop
alive=""; for p in $pids; do [[ -d /proc/$p && $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) != Z ]] && alive+="$p "; done
e2e_result "stop" "none of the $(wc -w <<<"$pids") snmpd/lldpd processes left" "${alive:-none left}" "$([[ -z $alive ]]; echo $?)"

e2e_summary
