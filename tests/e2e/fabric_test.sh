#!/usr/bin/env bash
# Checks the namespaced test fabric itself (no netdiag binaries needed), so
# that an e2e failure can be told apart from a broken fabric: it builds
# tests/e2e/fabric.yaml in namespaces and checks reachability, 5-tuple ECMP
# (kernel prediction and a UDP traceroute agree), that an nftables loss rule
# drops about its share on exactly one direction, that a link down is
# withdrawn fabric-wide within seconds, that swapped cables still route and
# show up in LLDP, and that teardown leaves nothing behind.
# Exit 0 pass, 1 fail, 77 skip (no root / netns / FRR / lldpd / nft).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib/fabric.sh"
source "$HERE/lib/testlib.sh"

e2e_require_fabric
e2e_lock
fabric_use_run_prefix
FABRIC_RUN=$(mktemp -d /tmp/nd-fabric-test.XXXXXX)
cleanup() {
  fabric_teardown
  if ((E2E_FAILED)); then echo "logs kept in $FABRIC_RUN"; else rm -rf "$FABRIC_RUN"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fabric_load "$HERE/fabric.yaml" || exit 1

# 1. Build.
t=$SECONDS
if fabric_create && fabric_start_frr && fabric_start_lldpd && fabric_wait_ecmp 60 && fabric_wait_lldp 30; then
  e2e_result "build" "fabric routed and LLDP as cabled" "after $((SECONDS - t)) s" 0
else
  e2e_result "build" "fabric routed and LLDP as cabled" "setup failed (see above)" 1
  exit 1
fi

# 2. Every host reaches every other host.
bad=$(e2e_ping_failures)
e2e_result "reachability" "all $(e2e_host_pairs | wc -l) host pairs ping" "${bad:-all ok}" "$([[ -z $bad ]]; echo $?)"

# 3. 5-tuple ECMP: UDP source ports spread over both uplinks of a leaf, and a
#    traceroute on each 5-tuple crosses the spine the kernel predicts.
src=host0; dst=host2
sa=$(fabric_host_addr $src); da=$(fabric_host_addr $dst)
declare -A per_dev=()
for sport in $(seq 40000 40031); do
  dev=$(ip -n "$(fabric_ns leaf0)" route get "$da" from "$sa" iif swp1 ipproto udp sport "$sport" dport 7601 |
    grep -o 'dev [^ ]*' | head -n1 | cut -d' ' -f2)
  per_dev[$dev]=$((${per_dev[$dev]:-0} + 1))
done
seen=$(for d in "${!per_dev[@]}"; do printf '%s:%s ' "$d" "${per_dev[$d]}"; done)
e2e_result "ecmp spread" "32 UDP flows $src->$dst over both leaf0 uplinks (swp3, swp4)" "$seen" \
  "$([[ ${per_dev[swp3]:-0} -gt 0 && ${per_dev[swp4]:-0} -gt 0 ]]; echo $?)"

if command -v python3 >/dev/null; then
  agree=0; total=0; spines_seen=""
  for sport in $(seq 40000 40011); do
    dev=$(ip -n "$(fabric_ns leaf0)" route get "$da" from "$sa" iif swp1 ipproto udp sport "$sport" dport 7601 |
      grep -o 'dev [^ ]*' | head -n1 | cut -d' ' -f2)
    # The spine port at the far end of that uplink answers TTL 2.
    want=${FAB_ADDR[${FAB_PEER[leaf0:$dev]}]}
    hops=$(fabric_exec $src python3 "$HERE/lib/udp_trace.py" "$da" 7601 "$sport" 6 | tr '\n' ' ')
    got=$(cut -d' ' -f2 <<<"$hops")
    total=$((total + 1)); [[ $got == "$want" ]] && agree=$((agree + 1))
    [[ $hops == *" $da "* ]] || got="incomplete: $hops"
    spines_seen+="$got "
  done
  e2e_result "traceroute" "12 fixed 5-tuples: hop 2 is the spine port 'ip route get' predicts" \
    "$agree/$total agree (hop 2: $(tr ' ' '\n' <<<"$spines_seen" | grep . | sort | uniq -c | awk '{printf "%s x%s ", $2, $1}'))" \
    "$([[ $agree == "$total" ]]; echo $?)"
else
  echo "NOTE: python3 missing; traceroute check left out"
fi

# 4. 3 % loss on the directed link leaf0:swp3 -> spine0:swp1 only. ICMP
#    hashes on addresses alone, so pick host pairs by the kernel's choice.
through=""; around=""
for pair in "host0 host4" "host1 host4" "host0 host2" "host1 host2" "host0 host5" "host1 host5" "host0 host3" "host1 host3"; do
  read -r s d <<<"$pair"
  iif=${FAB_PEER[$s:eth0]#*:}
  dev=$(ip -n "$(fabric_ns leaf0)" route get "$(fabric_host_addr "$d")" from "$(fabric_host_addr "$s")" iif "$iif" ipproto icmp |
    grep -o 'dev [^ ]*' | head -n1 | cut -d' ' -f2)
  [[ $dev == swp3 && -z $through ]] && through=$pair
  [[ $dev == swp4 && -z $around ]] && around=$pair
done
flood() {  # src dst count -> loss in percent (2 decimals)
  fabric_exec "$1" ping -q -c "$3" -i 0.002 -W 1 "$(fabric_host_addr "$2")" 2>/dev/null |
    sed -n 's/.* \([0-9.]*\)% packet loss.*/\1/p'
}
if [[ -n $through && -n $around ]]; then
  fabric_loss_add leaf0 swp3 3
  l_through=$(flood $through 4000)
  l_around=$(flood $around 1000)
  dropped=$(fabric_loss_dropped leaf0 swp3)
  fabric_loss_del leaf0 swp3
  l_after=$(flood $through 1000)
  ok=$(awk -v a="$l_through" -v b="$l_around" -v c="$l_after" 'BEGIN { print (a >= 1.8 && a <= 4.5 && b == 0 && c == 0) ? 0 : 1 }')
  e2e_result "loss rule" "~3 % (1.8..4.5) over leaf0:swp3 ($through), 0 % around it ($around), 0 % once removed" \
    "$l_through % (rule dropped $dropped frames), $l_around %, $l_after %" "$ok"
else
  e2e_result "loss rule" "host pairs through and around leaf0:swp3" "through='$through' around='$around'" 1
fi

# 5. A link down is withdrawn fabric-wide within seconds; everything still pings.
t0=$EPOCHREALTIME
fabric_link_set leaf1 swp4 down
withdrawn=""
for _ in $(seq 1 250); do
  if [[ $(fabric_paths leaf0 10.1.1.0/31) == 1 && $(fabric_paths leaf2 10.1.1.2/31) == 1 &&
        $(fabric_paths spine1 10.1.1.0/31) == 0 ]]; then
    withdrawn=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'); break
  fi
  sleep 0.02
done
bad=$(e2e_ping_failures)
e2e_result "link down" "leaf1:swp4<->spine1:swp2 withdrawn on leaf0, leaf2, spine1 within 5 s; all pairs ping" \
  "withdrawn in ${withdrawn:-(not within 5 s)} s; ping failures: ${bad:-none}" \
  "$([[ -n $withdrawn && -z $bad ]]; echo $?)"
fabric_link_set leaf1 swp4 up
t=$SECONDS
fabric_wait_ecmp 30; rc=$?
e2e_result "link up" "ECMP restored within 30 s" "after $((SECONDS - t)) s" "$rc"

# 6. Swapped cables: leaf0's two uplinks trade spine ports. Routing re-forms
#    (BGP unnumbered), LLDP shows the new neighbours.
fabric_swap_cables spine0:swp1 spine1:swp1
t=$SECONDS
fabric_wait_ecmp 30 && fabric_wait_lldp 30; rc=$?
lldp=$(fabric_lldp_neighbors leaf0 | grep -E '^swp[34] ' | tr '\n' ',')
bad=$(e2e_ping_failures)
e2e_result "cable swap" "routing back, all pairs ping, LLDP leaf0 swp3->spine1:swp1 swp4->spine0:swp1" \
  "after $((SECONDS - t)) s; LLDP $lldp ping failures: ${bad:-none}" \
  "$([[ $rc == 0 && -z $bad && $lldp == "swp3 spine1:swp1,swp4 spine0:swp1," ]]; echo $?)"
fabric_swap_cables spine0:swp1 spine1:swp1
fabric_wait_ecmp 30 && fabric_wait_lldp 30; rc=$?
e2e_result "cable swap back" "cabling as in the topology again" "rc $rc" "$rc"

# 7. Teardown leaves nothing.
pids=""
for ns in $(fabric_namespaces); do pids+=$(ip netns pids "$ns" | tr '\n' ' '); done
fabric_teardown
left=$(ip netns list | awk '{print $1}' | grep -xF -f <(fabric_namespaces) | tr '\n' ' ')
# A killed process may still be exiting (not yet a zombie) when teardown
# returns, more so on a busy machine: wait up to 10 s for every one to go.
alive=""
for _ in $(seq 1 100); do
  alive=""
  for p in $pids; do
    [[ -d /proc/$p && $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) != Z ]] &&
      alive+="$p($(cat "/proc/$p/comm" 2>/dev/null)) "
  done
  [[ -z $alive ]] && break
  sleep 0.1
done
e2e_result "teardown" "no namespaces, none of the $(wc -w <<<"$pids") processes left" \
  "namespaces: ${left:-none}; processes: ${alive:-none}" "$([[ -z $left && -z $alive ]]; echo $?)"

e2e_summary
