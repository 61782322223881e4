# shellcheck shell=bash disable=SC2034  # (OID names are for the sourcing tests)
# SNMP agents on the namespaced fabric: net-snmp's snmpd in switch
# namespaces, and lldpd as its AgentX subagent for LLDP-MIB, as a switch
# that cannot run netdiag's agent offers them. Source after lib/fabric.sh
# (fabric_load and fabric_create first). Then:
#
#   snmp_missing                   prints what is not installed (snmpd,
#                                  snmpbulkwalk, ...): a test skips if non-empty
#   snmp_start_snmpd [NODE...]     snmpd in each switch (default: all of
#                                  fabric_switches) on its management
#                                  address, udp/$SNMP_PORT: v2c community
#                                  $SNMP_COMMUNITY and the SNMPv3 authPriv
#                                  user $SNMP_V3_USER (SHA/AES)
#   snmp_start_lldpd [NODE...]     lldpd as AgentX subagent of that snmpd
#                                  (instead of fabric_start_lldpd, not with it)
#   snmp_wait [TIMEOUT] [NODE...]  until each snmpd answers ifName for every
#                                  fabric port and its lldpRemTable lists
#                                  exactly the switch neighbour cabled on each
#                                  switch-facing port (default 60 s; the
#                                  LLDP part only on nodes snmp_start_lldpd ran on)
#   snmp_stop [NODE...]            the lldpd and snmpd these started (pid
#                                  files); call it from the EXIT trap before
#                                  fabric_teardown
#   snmp_stop_snmpd NODE...        snmpd alone (a "switch restart" is
#                                  snmp_stop_snmpd N; snmp_start_snmpd N)
#   snmp_walk NODE OID             snmpbulkwalk from $FABRIC_MGMT_NS with the
#                                  credentials the poller uses for NODE
#                                  (numeric OIDs, "OID value" lines)
#   snmp_lldp_neighbors NODE       "localport system:port" lines, from LLDP-MIB
#   snmp_write_poller_config FILE [IDENTITY]   the poller's targets file
#   snmp_write_collectors FILE [IDENTITY]      the analyzer's collectors file
#
# Files of node N live in $FABRIC_RUN/snmp-N/: snmpd.conf, snmp.conf,
# persist/ (its persistent directory), agentx.sock, snmpd.pid, snmpd.log.
# Namespaces share the filesystem, so every snmpd gets its own
# configuration path (SNMPCONFPATH: no /etc/snmp file is read), persistent
# directory (SNMP_PERSISTENT_DIR) and AgentX socket. The AgentX lldpd keeps
# fabric_start_lldpd's layout ($FABRIC_RUN/lldpd-N/), so fabric_lldp_neighbors
# and fabric_wait_lldp work with it too.
#
# Debian ships no IF-MIB or LLDP-MIB files: everything here is numeric.
# SNMPv3 passphrases are in files ($FABRIC_RUN/snmp-keys/{auth,priv}.key,
# mode 0600, one line), never on a command line a poller would log;
# snmp_walk itself passes them to snmpbulkwalk (a test tool, not the poller).

SNMP_PORT=${SNMP_PORT:-161}
SNMP_COMMUNITY=${SNMP_COMMUNITY:-public}
SNMP_V3_USER=${SNMP_V3_USER:-netdiag}
SNMP_V3_AUTH_PASS=${SNMP_V3_AUTH_PASS:-netdiag-auth-e2e}   # >= 8 characters, no spaces
SNMP_V3_PRIV_PASS=${SNMP_V3_PRIV_PASS:-netdiag-priv-e2e}
SNMP_V3_NODES=${SNMP_V3_NODES:-}   # nodes polled with v3 (space separated); default: the spines
SNMP_POLLER_ID=${SNMP_POLLER_ID:-snmp-poller-1}
SNMPD_BIN=${SNMPD_BIN:-/usr/sbin/snmpd}

# Numeric OIDs used here and by the tests.
SNMP_OID_SYSUPTIME=.1.3.6.1.2.1.1.3.0
SNMP_OID_IFNAME=.1.3.6.1.2.1.31.1.1.1.1
SNMP_OID_IFXTABLE=.1.3.6.1.2.1.31.1.1
SNMP_OID_LLDP_LOC_PORTID=.1.0.8802.1.1.2.1.3.7.1.3
SNMP_OID_LLDP_REM=.1.0.8802.1.1.2.1.4.1.1

snmp_log() { printf '[snmp %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
snmp_err() { printf '[snmp] error: %s\n' "$*" >&2; return 1; }

snmp_dir() { echo "$FABRIC_RUN/snmp-$1"; }
snmp_key_dir() { echo "$FABRIC_RUN/snmp-keys"; }
# host:port the poller reaches node $1's snmpd at.
snmp_target() { echo "$(fabric_mgmt_addr "$1"):$SNMP_PORT"; }
# "v3" or "2c": how the poller (and snmp_walk) speaks to node $1.
snmp_version() {
  local v3=${SNMP_V3_NODES:-$(fabric_nodes_with_role spine | tr '\n' ' ')} n
  for n in $v3; do [[ $n == "$1" ]] && { echo 3; return 0; }; done
  echo 2c
}
_snmp_nodes() { if (($#)); then printf '%s\n' "$@"; else fabric_switches; fi; }

snmp_missing() {
  local need
  [[ -x $SNMPD_BIN ]] || printf '%s ' "$SNMPD_BIN (Debian package snmpd)"
  for need in snmpbulkwalk snmpget; do command -v "$need" >/dev/null || printf '%s ' "$need (Debian package snmp)"; done
  command -v lldpd >/dev/null || printf '%s ' "lldpd"
  return 0
}

# --- generic parts (bench/snmp_scale.sh uses them without a fabric) -----------

# Writes the SNMPv3 passphrase files into DIR (mode 0600, one line each).
snmp_write_keys() {
  local d=$1
  mkdir -p "$d" && chmod 700 "$d" || return 1
  (umask 077; printf '%s\n' "$SNMP_V3_AUTH_PASS" >"$d/auth.key"; printf '%s\n' "$SNMP_V3_PRIV_PASS" >"$d/priv.key")
}

# snmpd's configuration in DIR: listening on the agentAddress list LISTEN
# (e.g. udp:192.168.77.11:161), v2c read-only for source network CLIENTS,
# the v3 authPriv user, AgentX master on DIR/agentx.sock. SYSNAME (sysName,
# and the text of the snmpEngineID) must differ between agents: a v3
# poller keys its engine cache by engine ID.
snmp_write_snmpd_conf() {  # DIR LISTEN CLIENTS SYSNAME
  local d=$1 listen=$2 clients=$3 name=$4
  mkdir -p "$d/persist" || return 1
  cat >"$d/snmpd.conf" <<EOF
# written by tests/e2e/lib/snmp.sh
agentAddress $listen
rocommunity $SNMP_COMMUNITY $clients
rocommunity $SNMP_COMMUNITY 127.0.0.1
createUser $SNMP_V3_USER SHA $SNMP_V3_AUTH_PASS AES $SNMP_V3_PRIV_PASS
rouser $SNMP_V3_USER priv
master agentx
agentXSocket $d/agentx.sock
sysName $name
# A fixed engine ID; with the persistent directory read back (SNMPCONFPATH)
# snmpEngineBoots counts restarts, as on a real switch.
engineID netdiag-$name
# else every request is a "Connection from UDP" line in snmpd.log
dontLogTCPWrappersConnects yes
EOF
  # Read by snmpd as well (SNMPCONFPATH): no MIB files to parse.
  printf 'mibs :\npersistentDir %s/persist\n' "$d" >"$d/snmp.conf"
  chmod 600 "$d/snmpd.conf"
}

# Starts snmpd in namespace NS with the configuration in DIR; returns once
# it listens (pid file and AgentX socket there), non-zero if it did not start.
snmp_run_snmpd() {  # NS DIR
  local ns=$1 d=$2
  rm -f "$d/snmpd.pid" "$d/agentx.sock"
  # Without -f snmpd forks once it has opened its ports, so a bind failure is
  # its exit status. SNMPCONFPATH keeps it off /etc/snmp and /var/lib/snmp;
  # it names the persistent directory too, else that is written but never
  # read back (snmpEngineBoots would stay 1 across restarts).
  SNMPCONFPATH=$d:$d/persist SNMP_PERSISTENT_DIR=$d/persist \
    ip netns exec "$ns" "$SNMPD_BIN" -p "$d/snmpd.pid" -Lf "$d/snmpd.log" \
    >"$d/snmpd.out" 2>&1 || { snmp_err "snmpd in $ns failed: $(tail -3 "$d/snmpd.log" "$d/snmpd.out" 2>/dev/null)"; return 1; }
  for _ in $(seq 1 100); do
    [[ -s $d/snmpd.pid && -S $d/agentx.sock ]] && return 0
    sleep 0.05
  done
  snmp_err "snmpd in $ns: no pid file or AgentX socket after 5 s: $(tail -3 "$d/snmpd.log")"
}

# Stops the processes in the given pid files (TERM to all, then KILL to
# those left after 3 s; snmpd takes ~1-2 s to exit) and removes the files.
snmp_kill_pidfiles() {
  local f pid left
  local -a pids=()
  for f in "$@"; do
    [[ -s $f ]] || continue
    pid=$(<"$f"); rm -f "$f"
    [[ $pid =~ ^[0-9]+$ ]] && kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  ((${#pids[@]})) || return 0
  for _ in $(seq 1 60); do
    left=""
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left+="$pid "; done
    [[ -z $left ]] && return 0
    sleep 0.05
  done
  # shellcheck disable=SC2086
  kill -KILL $left 2>/dev/null
  return 0
}

# Total CPU seconds (user + system) of the processes in the given pid files.
snmp_cpu_seconds() {
  local f pid ticks=0 t hz
  hz=$(getconf CLK_TCK)
  for f in "$@"; do
    [[ -s $f ]] || continue
    pid=$(<"$f")
    t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) || continue
    ticks=$((ticks + t))
  done
  awk -v t="$ticks" -v hz="$hz" 'BEGIN { printf "%.2f\n", t / hz }'
}

# snmpbulkwalk options for a version: "2c" or "3".
snmp_auth_args() {
  if [[ $1 == 3 ]]; then
    echo "-v3 -l authPriv -u $SNMP_V3_USER -a SHA -A $SNMP_V3_AUTH_PASS -x AES -X $SNMP_V3_PRIV_PASS"
  else
    echo "-v2c -c $SNMP_COMMUNITY"
  fi
}

# The poller's targets file. Reads "node address version" lines (version 2c
# or 3) on stdin; KEYDIR holds auth.key and priv.key.
snmp_poller_config_from() {  # FILE IDENTITY KEYDIR
  local file=$1 id=$2 keys=$3 node addr ver
  {
    echo "identity: $id"
    echo "interval: ${SNMP_POLL_INTERVAL:-2}            # seconds between counter polls of each target"
    echo "lldp_interval: ${SNMP_LLDP_INTERVAL:-2}"
    echo "timeout: ${SNMP_TIMEOUT:-1}"
    echo "retries: ${SNMP_RETRIES:-1}"
    echo "defaults:"
    echo "  version: 2c"
    echo "  community: $SNMP_COMMUNITY"
    echo "targets:"
    while read -r node addr ver; do
      [[ -n $node ]] || continue
      echo "  - node: $node"
      echo "    address: $addr"
      if [[ $ver == 3 ]]; then
        echo "    version: 3"
        echo "    user: $SNMP_V3_USER"
        echo "    auth: SHA"
        echo "    auth_key_file: $keys/auth.key"
        echo "    priv: AES"
        echo "    priv_key_file: $keys/priv.key"
      fi
    done
  } >"$file"
}

# The analyzer's collectors file: poller IDENTITY may speak for NODES.
snmp_collectors_from() {  # FILE IDENTITY NODE...
  local file=$1 id=$2 n; shift 2
  {
    echo "collectors:"
    echo "  $id:"
    echo "    nodes:"
    for n in "$@"; do echo "      - $n"; done
  } >"$file"
}

# --- on the fabric --------------------------------------------------------------

snmp_start_snmpd() {
  local n d nodes
  nodes=$(_snmp_nodes "$@")
  command -v "$SNMPD_BIN" >/dev/null || { snmp_err "snmpd not installed ($SNMPD_BIN; Debian package snmpd)"; return 1; }
  snmp_write_keys "$(snmp_key_dir)" || return 1
  for n in $nodes; do
    d=$(snmp_dir "$n")
    snmp_write_snmpd_conf "$d" "udp:$(fabric_mgmt_addr "$n"):$SNMP_PORT,udp:127.0.0.1:$SNMP_PORT" \
      "$FABRIC_MGMT_NET.0/24" "$n" || return 1
    snmp_run_snmpd "$(fabric_ns "$n")" "$d" || return 1
  done
  snmp_log "snmpd started on $(wc -w <<<"$nodes") switches (v3 for: $(for n in $nodes; do [[ $(snmp_version "$n") == 3 ]] && printf '%s ' "$n"; done))"
}

# lldpd with the fabric's LLDP settings (port ids are interface names,
# tx-interval 1), registered as AgentX subagent of the node's snmpd.
snmp_start_lldpd() {
  local n d s nodes
  nodes=$(_snmp_nodes "$@")
  for n in $nodes; do
    d=$FABRIC_RUN/lldpd-$n; s=$(snmp_dir "$n")/agentx.sock
    [[ -S $s ]] || { snmp_err "no AgentX socket $s: snmp_start_snmpd $n first"; return 1; }
    mkdir -p "$d"
    cat >"$d/lldpd.conf" <<EOF
configure system hostname $n
configure system interface pattern swp*
configure lldp portidsubtype ifname
configure lldp tx-interval 1
EOF
    # -d: foreground (ip netns exec execs it, so $! is lldpd); -x -X: AgentX.
    ip netns exec "$(fabric_ns "$n")" lldpd -d -k -x -X "$s" -u "$d/lldpd.sock" -O "$d/lldpd.conf" \
      >"$d/lldpd.log" 2>&1 &
    echo $! >"$d/lldpd.pid"
    echo agentx >"$d/mode"
  done
  snmp_log "lldpd (AgentX subagent) started on $(wc -w <<<"$nodes") switches"
}

snmp_stop_snmpd() {
  local n; local -a f=()
  for n in "$@"; do f+=("$(snmp_dir "$n")/snmpd.pid"); done
  snmp_kill_pidfiles "${f[@]}"
}

snmp_stop() {
  local n; local -a f=()
  for n in $(_snmp_nodes "$@"); do
    [[ -f $FABRIC_RUN/lldpd-$n/mode ]] && f+=("$FABRIC_RUN/lldpd-$n/lldpd.pid")
    f+=("$(snmp_dir "$n")/snmpd.pid")
  done
  snmp_kill_pidfiles "${f[@]}"
}

# Walks OID on node $1's snmpd from the management namespace, as the poller
# would (v2c or v3 per snmp_version). Output: "OID value" lines, numeric.
snmp_walk() {  # NODE OID [extra snmpbulkwalk options...]
  local n=$1 oid=$2; shift 2
  # shellcheck disable=SC2046
  ip netns exec "$FABRIC_MGMT_NS" snmpbulkwalk $(snmp_auth_args "$(snmp_version "$n")") \
    -On -Oq -t 1 -r 1 "$@" "$(snmp_target "$n")" "$oid" 2>/dev/null
}

# Node $1's LLDP neighbours as its LLDP-MIB shows them: "localport
# system:port" lines. lldpRemTable rows are indexed
# lldpRemTimeMark.lldpRemLocalPortNum.lldpRemIndex; the local port number
# indexes lldpLocPortTable, whose lldpLocPortId (column 3) is the local
# interface name with `portidsubtype ifname`.
snmp_lldp_neighbors() {
  local n=$1 loc rem
  loc=$(snmp_walk "$n" "$SNMP_OID_LLDP_LOC_PORTID") || return 1
  rem=$(snmp_walk "$n" "$SNMP_OID_LLDP_REM") || return 1
  awk -v loc="$SNMP_OID_LLDP_LOC_PORTID." -v rem="$SNMP_OID_LLDP_REM." '
    function unq(s) { gsub(/^"|"$/, "", s); return s }
    NR == FNR { if (index($1, loc) == 1) port[substr($1, length(loc) + 1)] = unq($2); next }
    index($1, rem) == 1 {
      split(substr($1, length(rem) + 1), k, ".")   # column.timemark.localport.index
      key = k[2] "." k[3] "." k[4]; lp[key] = k[3]
      if (k[1] == 7) pid[key] = unq($2)
      if (k[1] == 9) sys[key] = unq($2)
    }
    END { for (key in lp) if ((key in pid) && (key in sys)) print port[lp[key]] " " sys[key] ":" pid[key] }
  ' <(echo "$loc") <(echo "$rem") | sort -V
}

# Prints why node $1 is not ready yet (nothing when it is).
_snmp_not_ready() {
  local n=$1 names p peer seen
  names=$(snmp_walk "$n" "$SNMP_OID_IFNAME" | awk '{ gsub(/"/, "", $2); print $2 }')
  [[ -n $names ]] || { echo "$n: no ifName answer from $(snmp_target "$n") (v$(snmp_version "$n"))"; return 0; }
  for p in $(fabric_ports "$n"); do
    grep -qx -- "$p" <<<"$names" || { echo "$n: ifName lacks $p"; return 0; }
  done
  # LLDP-MIB only where snmp_start_lldpd runs lldpd as AgentX subagent.
  [[ -f $FABRIC_RUN/lldpd-$n/mode ]] || return 0
  seen=$(snmp_lldp_neighbors "$n")
  for p in $(fabric_ports "$n"); do
    peer=${FAB_PEER[$n:$p]}
    [[ ${FAB_ROLE[${peer%%:*}]} == host ]] && continue
    [[ $(grep -- "^$p " <<<"$seen") == "$p $peer" ]] ||
      { echo "$n: lldpRemTable on $p shows '$(grep -- "^$p " <<<"$seen" | cut -d' ' -f2 | tr '\n' ' ')', cabled to $peer"; return 0; }
  done
}

snmp_wait() {
  local timeout=${1:-60} t0=$SECONDS n bad nodes
  (($#)) && shift
  nodes=$(_snmp_nodes "$@")
  while :; do
    bad=""
    for n in $nodes; do
      bad=$(_snmp_not_ready "$n")
      [[ -n $bad ]] && break
    done
    [[ -z $bad ]] && { snmp_log "SNMP ready on $(wc -w <<<"$nodes") switches (ifName, lldpRemTable as cabled) after $((SECONDS - t0)) s"; return 0; }
    (( SECONDS - t0 >= timeout )) && { snmp_err "SNMP not ready after ${timeout}s: $bad"; return 1; }
    sleep 0.5
  done
}

# The poller's targets file for the fabric's switches (v3 for
# snmp_version 3 nodes, the spines unless SNMP_V3_NODES says otherwise).
snmp_write_poller_config() {  # FILE [IDENTITY]
  local n
  snmp_write_keys "$(snmp_key_dir)" || return 1
  for n in $(fabric_switches); do echo "$n $(snmp_target "$n") $(snmp_version "$n")"; done |
    snmp_poller_config_from "$1" "${2:-$SNMP_POLLER_ID}" "$(snmp_key_dir)"
}

snmp_write_collectors() {  # FILE [IDENTITY]
  # shellcheck disable=SC2046
  snmp_collectors_from "$1" "${2:-$SNMP_POLLER_ID}" $(fabric_switches)
}
