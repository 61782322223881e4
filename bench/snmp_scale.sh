#!/usr/bin/env bash
# SNMP poller scale bench (issue #16): N network namespaces, each a "switch"
# with M interfaces and its own snmpd (net-snmp, v2c and an SNMPv3 authPriv
# user), reachable from the root namespace over a veth pair per namespace
# (root ndssK 10.200.x.1/30 <-> eth0 10.200.x.2/30 in namespace ndss-K).
# It writes the poller's targets file for the N snmpds, then runs the
# command after `--` with it ({config} in an argument becomes the file's
# path; $SNMP_SCALE_CONFIG holds it too), and prints the command's CPU and
# the snmpds' CPU (from /proc) while it ran: snmpd's cost is the switches',
# not the poller's. Without a command (or with --baseline) it times a
# sequential snmpbulkwalk of ifXTable of every target, the baseline a
# poller must beat.
#
#   usage: bench/snmp_scale.sh [-n N] [-m M] [--v3 K] [-t SECONDS] [--baseline]
#                              [--keep] [-- COMMAND ARGS...]
#     -n N        namespaces / snmpd instances (default 32)
#     -m M        interfaces per namespace (default 64; dummy interfaces, or
#                 veth pairs inside the namespace where the kernel has no dummy)
#     --v3 K      the first K targets are polled with SNMPv3 authPriv (SHA/AES),
#                 the others with v2c (default 0)
#     -t SECONDS  stop the command (SIGTERM, then SIGKILL 5 s later) after SECONDS
#     --baseline  also run the snmpbulkwalk baseline when a command is given
#     --keep      keep the run directory (configs, snmpd logs)
#   e.g. bench/snmp_scale.sh -n 32 -m 64 --v3 8 -t 60 -- build/cli/netdiag poll snmp --config {config}
#
# Needs root (namespaces), iproute2, snmpd and snmp (Debian packages). Takes
# about N x 0.1 s to set up. Cleans up (snmpds, namespaces) on exit. One run
# at a time (a lock); namespaces ndss-* left by a killed run are removed.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/e2e/lib/snmp.sh
source "$HERE/../tests/e2e/lib/snmp.sh"

N=32; M=64; V3=0; DURATION=""; BASELINE=0; KEEP=0; CMD=()
usage() { sed -n '/^#   usage/,/^#   e.g./p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case $1 in
    -n) N=$2; shift 2 ;;
    -m) M=$2; shift 2 ;;
    --v3) V3=$2; shift 2 ;;
    -t) DURATION=$2; shift 2 ;;
    --baseline) BASELINE=1; shift ;;
    --keep) KEEP=1; shift ;;
    --) shift; CMD=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "snmp_scale: unknown argument $1" >&2; usage ;;
  esac
done
[[ $N =~ ^[0-9]+$ && $N -ge 1 && $N -le 16000 && $M =~ ^[0-9]+$ && $M -ge 1 && $V3 =~ ^[0-9]+$ ]] ||
  { echo "snmp_scale: -n 1..16000, -m >= 1, --v3 >= 0" >&2; exit 2; }
[[ -z $DURATION || $DURATION =~ ^[0-9]+$ ]] || { echo "snmp_scale: -t takes whole seconds" >&2; exit 2; }
((${#CMD[@]})) || BASELINE=1
[[ $(id -u) == 0 ]] || { echo "snmp_scale: needs root (network namespaces)" >&2; exit 2; }
missing=$(snmp_missing | sed 's/lldpd //')
[[ -z $missing ]] || { echo "snmp_scale: not installed: $missing" >&2; exit 2; }

PREFIX=ndss
log() { printf '[snmp_scale %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
ns_of() { echo "$PREFIX-$1"; }
# 10.200.0.0/16 in /30s: target k has 10.200.x.(y+1) (root side) and .(y+2).
addr_of() { local b=$(($1 * 4)); echo "10.200.$((b / 256)).$((b % 256 + $2))"; }

exec {LOCK_FD}>/run/lock/netdiag-snmp-scale.lock
flock -n "$LOCK_FD" || { echo "snmp_scale: another run holds /run/lock/netdiag-snmp-scale.lock" >&2; exit 1; }

RUN=$(mktemp -d /tmp/nd-snmp-scale.XXXXXX)
chmod 755 "$RUN"
cleanup() {
  local f ns pids
  local -a pidfiles=()
  for f in "$RUN"/snmp-*/snmpd.pid; do [[ -e $f ]] && pidfiles+=("$f"); done
  snmp_kill_pidfiles "${pidfiles[@]}"
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$PREFIX-[0-9]+$"); do
    # Anything else still in our namespaces was started by this run.
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    # shellcheck disable=SC2086
    [[ -n ${pids// /} ]] && kill -KILL $pids 2>/dev/null
    # The root end first: deleting a namespace frees its veths only
    # asynchronously, and a quick next run would find ndssK taken.
    ip link del "$PREFIX${ns#"$PREFIX"-}" 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  if ((KEEP)); then echo "run directory kept: $RUN" >&2; else rm -rf "$RUN"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

leftover=$(ip netns list | awk '{print $1}' | grep -cE "^$PREFIX-[0-9]+$")
((leftover)) && { log "removing $leftover namespaces left by an earlier run"; cleanup; RUN=$(mktemp -d /tmp/nd-snmp-scale.XXXXXX); chmod 755 "$RUN"; }

# --- namespaces, interfaces ---------------------------------------------------------

t0=$SECONDS
# dummy where the kernel has it; else veth pairs d0<->d1, d2<->d3, ... (both
# ends in the namespace, so all are up with carrier).
ip netns add "$PREFIX-probe" || exit 1
if ip -n "$PREFIX-probe" link add name d0 type dummy 2>/dev/null; then KIND=dummy; else KIND=veth; fi
ip netns del "$PREFIX-probe"
for ((k = 0; k < N; k++)); do
  ns=$(ns_of $k)
  ip netns add "$ns" || { log "ip netns add $ns failed"; exit 1; }
  {
    echo "link set lo up"
    if [[ $KIND == dummy ]]; then
      for ((i = 0; i < M; i++)); do echo "link add name d$i type dummy"; done
    else
      for ((i = 0; i + 1 < M; i += 2)); do echo "link add name d$i type veth peer name d$((i + 1))"; done
      ((M % 2)) && echo "link add name d$((M - 1)) type ifb"
    fi
    for ((i = 0; i < M; i++)); do echo "link set d$i up"; done
  } >"$RUN/links.batch"
  ip -n "$ns" -batch "$RUN/links.batch" || { log "interfaces in $ns failed"; exit 1; }
  ip link del "$PREFIX$k" 2>/dev/null   # left by a killed run
  ip link add name "$PREFIX$k" type veth peer name eth0 netns "$ns" || { log "veth to $ns failed"; exit 1; }
  ip addr add "$(addr_of $k 1)/30" dev "$PREFIX$k" && ip link set "$PREFIX$k" up || exit 1
  ip -n "$ns" addr add "$(addr_of $k 2)/30" dev eth0 && ip -n "$ns" link set eth0 up || exit 1
done
log "$N namespaces with $M $KIND interfaces each (+ lo, eth0) in $((SECONDS - t0)) s"

# --- snmpd ------------------------------------------------------------------------

t0=$SECONDS
for ((k = 0; k < N; k++)); do
  d=$RUN/snmp-$k
  snmp_write_snmpd_conf "$d" "udp:$(addr_of $k 2):161" "10.200.0.0/16" "sw$k" || exit 1
  snmp_run_snmpd "$(ns_of $k)" "$d" || exit 1
done
# Every snmpd answers (a positive signal, bounded).
for ((k = 0; k < N; k++)); do
  ok=0
  for _ in $(seq 1 50); do
    snmpget -v2c -c "$SNMP_COMMUNITY" -t 1 -r 0 -Oqv "$(addr_of $k 2)" "$SNMP_OID_SYSUPTIME" >/dev/null 2>&1 && { ok=1; break; }
    sleep 0.1
  done
  ((ok)) || { log "snmpd sw$k ($(addr_of $k 2)) does not answer: $(tail -3 "$RUN/snmp-$k/snmpd.log")"; exit 1; }
done
log "$N snmpd up and answering in $((SECONDS - t0)) s"

snmp_write_keys "$RUN/keys" || exit 1
for ((k = 0; k < N; k++)); do echo "sw$k $(addr_of $k 2):161 $([[ $k -lt $V3 ]] && echo 3 || echo 2c)"; done |
  snmp_poller_config_from "$RUN/poller.yaml" "${SNMP_POLLER_ID}" "$RUN/keys"
# shellcheck disable=SC2046
snmp_collectors_from "$RUN/collectors.yaml" "$SNMP_POLLER_ID" $(for ((k = 0; k < N; k++)); do echo "sw$k"; done)
export SNMP_SCALE_CONFIG=$RUN/poller.yaml SNMP_SCALE_COLLECTORS=$RUN/collectors.yaml SNMP_SCALE_DIR=$RUN
log "poller config $SNMP_SCALE_CONFIG: $N targets ($((V3 < N ? V3 : N)) v3), collectors file $SNMP_SCALE_COLLECTORS"

snmpd_pidfiles() { local k; for ((k = 0; k < N; k++)); do echo "$RUN/snmp-$k/snmpd.pid"; done; }
mapfile -t PIDFILES < <(snmpd_pidfiles)
rss_mib() { local f s=0; for f in "${PIDFILES[@]}"; do s=$((s + $(awk '/VmRSS/ {print $2}' "/proc/$(<"$f")/status"))); done; echo $((s / 1024)); }

# --- baseline: one sequential snmpbulkwalk of ifXTable per target ----------------

if ((BASELINE)); then
  reps=${BASELINE_REPS:-10}   # snmpbulkwalk's own default max-repetitions
  c0=$(snmp_cpu_seconds "${PIDFILES[@]}")
  t=$EPOCHREALTIME; vb=0
  for ((k = 0; k < N; k++)); do
    # shellcheck disable=SC2046
    out=$(snmpbulkwalk $(snmp_auth_args "$([[ $k -lt $V3 ]] && echo 3 || echo 2c)") -Cr"$reps" -On -Oq -t 2 -r 1 \
      "$(addr_of $k 2)" "$SNMP_OID_IFXTABLE" 2>&1) || { log "snmpbulkwalk sw$k failed: ${out:0:200}"; exit 1; }
    vb=$((vb + $(grep -c '^\.' <<<"$out")))
  done
  wall=$(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  c1=$(snmp_cpu_seconds "${PIDFILES[@]}")
  echo "baseline: sequential snmpbulkwalk (max-repetitions $reps) of ifXTable on $N targets ($((V3 < N ? V3 : N)) v3):" \
    "$vb varbinds in $wall s ($(awk -v v="$vb" -v w="$wall" 'BEGIN { printf "%.0f", v / w }') varbinds/s);" \
    "snmpd CPU $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') s"
fi

# --- the command --------------------------------------------------------------------

rc=0
if ((${#CMD[@]})); then
  args=()
  for a in "${CMD[@]}"; do args+=("${a//\{config\}/$SNMP_SCALE_CONFIG}"); done
  log "running: ${args[*]}${DURATION:+ (for $DURATION s)}"
  c0=$(snmp_cpu_seconds "${PIDFILES[@]}")
  t=$EPOCHREALTIME
  TIMEFORMAT="command: %R s wall, %U s user, %S s system CPU"
  if [[ -n $DURATION ]]; then
    time timeout -s TERM -k 5 "$DURATION" "${args[@]}"; rc=$?
    ((rc == 124)) && rc=0   # stopped by -t, as asked
  else
    time "${args[@]}"; rc=$?
  fi
  wall=$(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  c1=$(snmp_cpu_seconds "${PIDFILES[@]}")
  echo "command exit status $rc"
  echo "snmpd ($N processes): $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') s CPU while the command ran ($wall s)"
fi
echo "snmpd ($N processes): $(snmp_cpu_seconds "${PIDFILES[@]}") s CPU in all since start, RSS $(rss_mib) MiB in all"
exit "$rc"
