#!/usr/bin/env bash
# The fault-to-resolution timeline under --drain-policy auto (issue #14), on
# the namespaced FRR fabric of the e2e test (tests/e2e/fabric.yaml): 3 % loss
# on one leaf->spine direction, then detect (the first incident on the
# link opens), localize (it pages), drained (leaf's agent shut the port's
# BGP session) and resolved (drained, and the hosts' probe loss back to
# background: at most 0.1 % over 5 windows). Each run uses another leaf's
# uplink; after it the fault is removed and `netdiag drain undo` restores
# the link. Prints each run and the median and maximum of each time,
# against Tencent Xingmai's 1 / 3 / 5 minutes (found, localized, resolved).
#
#   usage: bench/drain_timeline.sh [BUILD_DIR] [RUNS]     (root; 3 runs by default)
set -uo pipefail  # not -e: `netdiag locate` exits 1 while a fault is open
build=$(readlink -f "${1:-build}")
runs=${2:-3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e" && pwd)
source "$HERE/lib/fabric.sh"
source "$HERE/lib/testlib.sh"
source "$HERE/lib/live.sh"
NETDIAG=$build/cli/netdiag
TOPO=$HERE/fabric.yaml
WINDOW=2; PROBE_RATE=400; FLOWS_PER_PEER=8; RESOLVE_AFTER=20
GRPC_PORT=7600; WEB_PORT=9600; AGENT_METRICS_PORT=9700; RESPONDER_PORT=7601
e2e_require_fabric
e2e_lock
fabric_use_run_prefix
FABRIC_RUN=$(mktemp -d /tmp/nd-drain-bench.XXXXXX)
chmod 755 "$FABRIC_RUN"
trap 'fabric_teardown; echo "logs in $FABRIC_RUN"' EXIT
DRAIN_KEY=$FABRIC_RUN/drain.key; API_TOKEN=$FABRIC_RUN/api.token
(umask 077; head -c 32 /dev/urandom | base64 >"$DRAIN_KEY"; head -c 32 /dev/urandom | base64 >"$API_TOKEN")
ANALYZER_EXTRA=(--drain-policy auto --drain-key "$DRAIN_KEY" --api-token-file "$API_TOKEN")
fabric_load "$TOPO" || exit 1
MGMT=$(fabric_mgmt_server_addr)
API=http://127.0.0.1:$WEB_PORT
AGENT_UPLINK=(--analyzer "$MGMT:$GRPC_PORT")
fabric_create && fabric_start_frr && fabric_start_lldpd && fabric_wait_ecmp 60 && fabric_wait_lldp 30 || exit 1
start_analyzer || exit 1
for n in "${FAB_NODES[@]}"; do start_agent "$n"; done
[[ -z $(wait_agents 60) ]] || { echo "agents not ready"; exit 1; }
sleep $((WINDOW * 5 + 5))

probe_totals() {
  local s=0 l=0 n v
  for n in $(fabric_hosts); do
    v=$(agent_metric "$n" netdiag_agent_probes_sent_total); [[ $v =~ ^[0-9]+$ ]] && s=$((s + v))
    v=$(agent_metric "$n" netdiag_agent_probes_lost_total); [[ $v =~ ^[0-9]+$ ]] && l=$((l + v))
  done
  echo "$s $l"
}
now() { date +%s.%N; }
links=(leaf0:swp3 leaf1:swp4 leaf2:swp3 leaf0:swp4 leaf1:swp3)
results=()
for ((r = 0; r < runs; r++)); do
  node=${links[r % ${#links[@]}]%%:*}; port=${links[r % ${#links[@]}]#*:}
  link="$node:$port->${FAB_PEER[$node:$port]}"; rev=$(reverse_link "$link")
  fabric_loss_add "$node" "$port" 3
  fault=$(now); drained=""; resolved=""
  while :; do
    el=$(awk -v a="$(now)" -v b="$fault" 'BEGIN { printf "%d", a - b }')
    ((el > 400)) && break
    if [[ -z $drained ]]; then
      st=$(api /api/v1/drain | jq -r --arg a "$link" --arg b "$rev" '[.drained[]? | select(.link == $a or .link == $b)] | first | .state // ""')
      [[ $st == drained ]] && drained=$(now)
      [[ $st == failed ]] && { echo "run $r: drain failed"; break; }
      sleep 1
      continue
    fi
    read -r s0 l0 < <(probe_totals); sleep $((WINDOW * 5)); read -r s1 l1 < <(probe_totals)
    if awk -v s=$((s1 - s0)) -v l=$((l1 - l0)) 'BEGIN { exit !(s > 0 && l / s <= 0.001) }'; then
      resolved=$(now); break
    fi
  done
  inc=$(all_incidents | jq -c --arg l "$link" '[.incidents[]? | select(.link == $l and .localized_at != null)] | last // {}')
  line=$(jq -r --argjson f "$fault" --arg d "${drained:-0}" --arg r "${resolved:-0}" \
    '"\((.opened_at // 0) - $f) \((.localized_at // 0) - $f) \(($d | tonumber) - $f) \(($r | tonumber) - $f)"' <<<"$inc")
  read -r det loc dr res <<<"$line"
  printf 'run %d %s: detect %.1f s, localize %.1f s, drained %.1f s, resolved %.1f s\n' "$r" "$link" "$det" "$loc" "$dr" "$res"
  results+=("$det $loc $dr $res")
  fabric_loss_del "$node" "$port"
  in_mgmt "$NETDIAG" drain undo "$link" --analyzer "$API" --token-file "$API_TOKEN" --by bench >/dev/null
  fabric_wait_ecmp 60 >/dev/null
  # The next run starts on a settled fabric: the incident resolved.
  for _ in $(seq 1 120); do
    open=$(locate_json | jq -r --arg l "$link" '[.incidents[]? | select(.link == $l)] | length')
    [[ $open == 0 ]] && break
    sleep 3
  done
done
printf '%s\n' "${results[@]}" | awk '
  { for (i = 1; i <= 4; i++) v[i, NR] = $i }
  END {
    split("detect localize drained resolved", name, " ")
    for (i = 1; i <= 4; i++) {
      n = 0; for (j = 1; j <= NR; j++) a[++n] = v[i, j]
      for (x = 1; x <= n; x++) for (y = x + 1; y <= n; y++) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
      med = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
      printf "%-9s median %6.1f s  max %6.1f s\n", name[i], med, a[n]
    }
    print "Xingmai:  found 60 s, localized 180 s, resolved 300 s"
  }'
