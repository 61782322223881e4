# shellcheck shell=bash
# A leaf-spine fabric of Linux routers in network namespaces, built from a
# netdiag topology file (tests/e2e/fabric.yaml). Source this file, then:
#
#   fabric_use_run_prefix     namespaces nd<tag>-<node> for this run only
#   fabric_load FILE          read nodes, roles and links (with addresses)
#   fabric_create             namespaces, sysctls, veth pairs through the
#                             patch panel, addresses, host default routes,
#                             the management network
#   fabric_start_frr          zebra + bgpd in every switch namespace
#   fabric_start_lldpd        lldpd in every switch namespace
#   fabric_wait_ecmp T        until every leaf has one ECMP path per spine to
#                             every remote host prefix (at most T seconds)
#   fabric_loss_add N P PCT / fabric_loss_del N P   random loss leaving N:P
#   fabric_link_set N P up|down
#   fabric_swap_cables X:p Y:q                re-plug two cable ends
#   fabric_teardown           kill everything running in our namespaces,
#                             delete them (call it from a trap on EXIT)
#
# Each node runs in namespace nd-<node> (nd<tag>-<node> after
# fabric_use_run_prefix, as the tests do); its interfaces are named exactly as
# the topology's ports. Switches route with FRR's BGP (unnumbered: one
# IPv6 link-local session per port, so a swapped cable still routes); each
# leaf has its own ASN, the spines share one (a spine that loses a leaf then
# withdraws instead of detouring through another leaf); leaves announce their
# host /31s.
#
# Cables: every link runs through a patch panel, namespace nd-patch: port
# A:p <-veth-> panel end, a bridge per cable, panel end <-veth-> B:q. The
# switch and host interfaces therefore never change (as on real switches);
# re-plugging a cable only moves panel ends between bridges, which the
# daemons and agents see as a carrier flap and new LLDP neighbours.
# Moving veth ends between namespaces instead makes each port a new netdev
# under an old name: FRR and lldpd keep the old interface index and stop
# peering/sending on it (checked with FRR 8.4, lldpd 1.0.16). The panel's
# bridges forward LLDP (group_fwd_mask 0x4000); taking a link down with
# fabric_link_set also drops the far panel end, so both ends lose carrier as
# with a direct veth pair. Management traffic (agents <-> analyzer) uses a separate veth
# per namespace, mgmt0, bridged in namespace nd-mgmt on $FABRIC_MGMT_NET,
# so it never shares a link with probe traffic.
#
# Needs root, iproute2, FRR (Debian `frr`), lldpd, nftables. Functions return
# non-zero with a message on stderr; they never exit the caller's shell.

FABRIC_NS_PREFIX_GIVEN=${FABRIC_NS_PREFIX:+1}
FABRIC_NS_PREFIX=${FABRIC_NS_PREFIX:-nd-}
FABRIC_MGMT_NS=${FABRIC_MGMT_NS:-${FABRIC_NS_PREFIX}mgmt}
FABRIC_PATCH_NS=${FABRIC_PATCH_NS:-${FABRIC_NS_PREFIX}patch}
FABRIC_MGMT_NET=${FABRIC_MGMT_NET:-192.168.77}  # /24; .1 is the nd-mgmt bridge
FABRIC_SPINE_ASN=${FABRIC_SPINE_ASN:-65000}
FABRIC_LEAF_ASN_BASE=${FABRIC_LEAF_ASN_BASE:-65001}
FABRIC_FRR_DIR=${FABRIC_FRR_DIR:-/usr/lib/frr}
FABRIC_RUN=${FABRIC_RUN:-}  # run directory (configs, sockets, logs); made by fabric_create

FAB_NODES=()          # node names in file order
declare -gA FAB_ROLE  # node -> role
declare -gA FAB_IDX   # node -> index in FAB_NODES
FAB_LINKS=()          # "A:p B:q addrA addrB", one per link
declare -gA FAB_PEER  # "A:p" -> "B:q" as cabled now (swaps update it)
declare -gA FAB_ADDR  # "A:p" -> its address (stays with the port)
declare -gA FAB_PANEL # "A:p" -> the panel end its cable plugs it into (l<k>a / l<k>b)

fabric_log() { printf '[fabric %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
fabric_err() { printf '[fabric] error: %s\n' "$*" >&2; return 1; }

# Gives this run its own namespace prefix, nd<4 hex digits>-, unless the
# caller chose one (FABRIC_NS_PREFIX). Namespace names are global to the
# kernel: two runs on one machine (two CI jobs, or a hand-built fabric beside a
# test) would otherwise both want nd-mgmt. Call before fabric_create.
fabric_use_run_prefix() {
  [[ -n $FABRIC_NS_PREFIX_GIVEN ]] && return 0
  local tag="" _
  for _ in 1 2 3 4 5 6 7 8; do
    tag=$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')
    ip netns list | awk '{print $1}' | grep -q -- "^nd$tag-" || break
  done
  FABRIC_NS_PREFIX="nd$tag-"
  FABRIC_MGMT_NS="${FABRIC_NS_PREFIX}mgmt"
  FABRIC_PATCH_NS="${FABRIC_NS_PREFIX}patch"
  fabric_log "namespaces of this run: ${FABRIC_NS_PREFIX}*"
}

fabric_ns() { printf '%s%s' "$FABRIC_NS_PREFIX" "$1"; }

# Runs a command in node $1's namespace.
fabric_exec() { local n=$1; shift; ip netns exec "$(fabric_ns "$n")" "$@"; }

# Reads the topology: one `- {name: N, role: R, ...}` node or
# `- {a: N:p, b: M:q, addr_a: X, addr_b: Y}` link per line (the form of
# tests/e2e/fabric.yaml). Any other entry under nodes:/links: is an error, so
# a file this parser cannot read fails loudly instead of half-building.
fabric_load() {
  local file=$1 section="" line n=0 name role a b aa ab
  [[ -r $file ]] || { fabric_err "cannot read topology $file"; return 1; }
  FAB_NODES=(); FAB_LINKS=(); FAB_ROLE=(); FAB_IDX=(); FAB_PEER=(); FAB_ADDR=(); FAB_PANEL=()
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    line=${line%%#*}
    [[ $line =~ ^[[:space:]]*$ ]] && continue
    if [[ $line =~ ^([a-z_]+): ]]; then section=${BASH_REMATCH[1]}; continue; fi
    case $section in
      nodes)
        if [[ $line =~ ^[[:space:]]*-[[:space:]]*\{name:[[:space:]]*([A-Za-z0-9._-]+),[[:space:]]*role:[[:space:]]*([A-Za-z0-9_-]+)[,}] ]]; then
          name=${BASH_REMATCH[1]}; role=${BASH_REMATCH[2]}
          [[ -z ${FAB_ROLE[$name]:-} ]] || { fabric_err "$file:$n: node $name declared twice"; return 1; }
          [[ $(fabric_ns "$name") != "$FABRIC_MGMT_NS" && $(fabric_ns "$name") != "$FABRIC_PATCH_NS" ]] ||
            { fabric_err "$file:$n: node name $name clashes with the test's own namespaces"; return 1; }
          FAB_IDX[$name]=${#FAB_NODES[@]}
          FAB_NODES+=("$name"); FAB_ROLE[$name]=$role
        else
          fabric_err "$file:$n: node not in the form '- {name: N, role: R, ...}': $line"; return 1
        fi ;;
      links)
        if [[ $line =~ ^[[:space:]]*-[[:space:]]*\{a:[[:space:]]*([^,[:space:]]+),[[:space:]]*b:[[:space:]]*([^,[:space:]]+),[[:space:]]*addr_a:[[:space:]]*([0-9.]+),[[:space:]]*addr_b:[[:space:]]*([0-9.]+)[[:space:]]*\} ]]; then
          a=${BASH_REMATCH[1]}; b=${BASH_REMATCH[2]}; aa=${BASH_REMATCH[3]}; ab=${BASH_REMATCH[4]}
          local end
          for end in "$a" "$b"; do
            [[ $end =~ ^[A-Za-z0-9._-]+:[A-Za-z0-9._/-]+$ ]] || { fabric_err "$file:$n: bad port $end"; return 1; }
            [[ -n ${FAB_ROLE[${end%%:*}]:-} ]] || { fabric_err "$file:$n: undeclared node in $end"; return 1; }
            [[ -z ${FAB_PEER[$end]:-} ]] || { fabric_err "$file:$n: port $end used twice"; return 1; }
            local port=${end#*:}
            (( ${#port} <= 15 )) || { fabric_err "$file:$n: port name of $end longer than an interface name"; return 1; }
          done
          FAB_PANEL[$a]="l${#FAB_LINKS[@]}a"; FAB_PANEL[$b]="l${#FAB_LINKS[@]}b"
          FAB_LINKS+=("$a $b $aa $ab")
          FAB_PEER[$a]=$b; FAB_PEER[$b]=$a; FAB_ADDR[$a]=$aa; FAB_ADDR[$b]=$ab
        else
          fabric_err "$file:$n: link not in the form '- {a: N:p, b: M:q, addr_a: X, addr_b: Y}': $line"; return 1
        fi ;;
    esac
  done < "$file"
  (( ${#FAB_NODES[@]} > 0 && ${#FAB_LINKS[@]} > 0 )) || { fabric_err "$file: no nodes or links"; return 1; }
}

fabric_nodes_with_role() { local n; for n in "${FAB_NODES[@]}"; do [[ ${FAB_ROLE[$n]} == "$1" ]] && echo "$n"; done; return 0; }
fabric_switches() { local n; for n in "${FAB_NODES[@]}"; do [[ ${FAB_ROLE[$n]} != host ]] && echo "$n"; done; return 0; }
fabric_hosts() { fabric_nodes_with_role host; }
# Ports of a node, sorted.
fabric_ports() { local p; for p in "${!FAB_PEER[@]}"; do [[ ${p%%:*} == "$1" ]] && echo "${p#*:}"; done | sort -V; }
# The /31 peer address of an address (x.y.z.2k <-> x.y.z.2k+1).
fabric_addr_peer() { local a=$1; local last=${a##*.}; echo "${a%.*}.$((last ^ 1))"; }
# A host's address (its first port's) and its leaf-side gateway.
fabric_host_addr() { local p; p=$(fabric_ports "$1" | head -n1); echo "${FAB_ADDR[$1:$p]}"; }
# Management address of a node: $FABRIC_MGMT_NET.(10 + its index).
fabric_mgmt_addr() { echo "$FABRIC_MGMT_NET.$((10 + FAB_IDX[$1]))"; }
fabric_mgmt_server_addr() { echo "$FABRIC_MGMT_NET.1"; }
# Every namespace the fabric uses.
fabric_namespaces() { local n; echo "$FABRIC_MGMT_NS"; echo "$FABRIC_PATCH_NS"; for n in "${FAB_NODES[@]}"; do fabric_ns "$n"; echo; done; }
_fabric_panel() { ip -n "$FABRIC_PATCH_NS" "$@"; }

_fabric_sysctl() {  # node key=value...
  local n=$1; shift
  fabric_exec "$n" sysctl -qw "$@" >/dev/null || fabric_err "sysctl $* in $(fabric_ns "$n") failed"
}

_fabric_router_sysctls() {
  _fabric_sysctl "$1" net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
    net.ipv4.fib_multipath_hash_policy=3 net.ipv4.fib_multipath_hash_fields=0x0037 \
    net.ipv4.icmp_ratelimit=0 net.ipv4.icmp_errors_use_inbound_ifaddr=1 \
    net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
    net.ipv4.conf.all.ignore_routes_with_linkdown=1 net.ipv4.conf.default.ignore_routes_with_linkdown=1 \
    net.ipv6.conf.all.ignore_routes_with_linkdown=1 net.ipv6.conf.default.ignore_routes_with_linkdown=1
}

_fabric_host_sysctls() {
  _fabric_sysctl "$1" net.ipv4.icmp_ratelimit=0 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
}

# Gives port N:p its address and brings it up (after creation or a re-plug).
_fabric_port_up() {
  local node=${1%%:*} port=${1#*:}
  fabric_exec "$node" ip addr replace "${FAB_ADDR[$1]}/31" dev "$port" || return 1
  fabric_exec "$node" ip link set dev "$port" up
}

fabric_create() {
  local n ns link a b
  [[ ${#FAB_NODES[@]} -gt 0 ]] || { fabric_err "fabric_load first"; return 1; }
  if [[ -z $FABRIC_RUN ]]; then FABRIC_RUN=$(mktemp -d /tmp/nd-e2e.XXXXXX) || return 1; fi
  mkdir -p "$FABRIC_RUN" && chmod 755 "$FABRIC_RUN"
  for ns in $(fabric_namespaces); do
    if ip netns list | awk '{print $1}' | grep -qx -- "$ns"; then
      fabric_err "namespace $ns exists already (another run, or a leftover: ip netns del $ns)"; return 1
    fi
  done
  # Management network first: nd-mgmt with a bridge.
  ip netns add "$FABRIC_MGMT_NS" || return 1
  ip -n "$FABRIC_MGMT_NS" link set lo up
  ip -n "$FABRIC_MGMT_NS" link add name br0 type bridge || return 1
  ip -n "$FABRIC_MGMT_NS" addr add "$(fabric_mgmt_server_addr)/24" dev br0
  ip -n "$FABRIC_MGMT_NS" link set br0 up
  for n in "${FAB_NODES[@]}"; do
    ns=$(fabric_ns "$n")
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    if [[ ${FAB_ROLE[$n]} == host ]]; then _fabric_host_sysctls "$n" || return 1
    else _fabric_router_sysctls "$n" || return 1; fi
    ip link add name mgmt0 netns "$ns" type veth peer name "m-$n" netns "$FABRIC_MGMT_NS" || return 1
    ip -n "$FABRIC_MGMT_NS" link set "m-$n" master br0 up
    ip -n "$ns" addr add "$(fabric_mgmt_addr "$n")/24" dev mgmt0
    ip -n "$ns" link set mgmt0 up
  done
  # The fabric's links: port <-> panel end, a bridge per cable, panel end <-> port.
  ip netns add "$FABRIC_PATCH_NS" || return 1
  local k=0 end
  for link in "${FAB_LINKS[@]}"; do
    read -r a b _ _ <<<"$link"
    ip -n "$FABRIC_PATCH_NS" link add name "c$k" type bridge stp_state 0 mcast_snooping 0 \
      group_fwd_mask 0x4000 || { fabric_err "bridge for cable $a <-> $b"; return 1; }
    ip -n "$FABRIC_PATCH_NS" link set "c$k" up
    for end in "$a" "$b"; do
      ip link add name "${end#*:}" netns "$(fabric_ns "${end%%:*}")" type veth \
        peer name "${FAB_PANEL[$end]}" netns "$FABRIC_PATCH_NS" || { fabric_err "veth for $end"; return 1; }
      ip -n "$FABRIC_PATCH_NS" link set "${FAB_PANEL[$end]}" master "c$k" up || return 1
      _fabric_port_up "$end" || return 1
    done
    k=$((k + 1))
  done
  # Hosts: a default route via the leaf end of their (first) link.
  local p gw
  for n in $(fabric_hosts); do
    p=$(fabric_ports "$n" | head -n1)
    gw=${FAB_ADDR[${FAB_PEER[$n:$p]}]}
    fabric_exec "$n" ip route replace default via "$gw" dev "$p" || return 1
  done
  fabric_log "created ${#FAB_NODES[@]} namespaces + $FABRIC_MGMT_NS, ${#FAB_LINKS[@]} links (run dir $FABRIC_RUN)"
}

# --- FRR ------------------------------------------------------------------

_fabric_asn() {
  case ${FAB_ROLE[$1]} in
    spine) echo "$FABRIC_SPINE_ASN" ;;
    *) local i=0 n; for n in $(fabric_nodes_with_role "${FAB_ROLE[$1]}"); do
         [[ $n == "$1" ]] && break; i=$((i + 1)); done
       echo $((FABRIC_LEAF_ASN_BASE + i)) ;;
  esac
}

_fabric_write_frr_conf() {
  local n=$1 d=$2 p peer asn
  asn=$(_fabric_asn "$n")
  cat >"$d/zebra.conf" <<EOF
hostname $n
log file $d/zebra.log
! FRR 8.4 kernel nexthop groups can leave the kernel with one ECMP path after a flap
no zebra nexthop kernel enable
EOF
  {
    echo "hostname $n"
    echo "log file $d/bgpd.log"
    echo "router bgp $asn"
    echo " bgp router-id 10.255.0.$((1 + FAB_IDX[$n]))"
    echo " no bgp ebgp-requires-policy"
    echo " bgp bestpath as-path multipath-relax"
    echo " timers bgp 1 3"
    echo " neighbor FABRIC peer-group"
    echo " neighbor FABRIC remote-as external"
    echo " neighbor FABRIC advertisement-interval 0"
    echo " neighbor FABRIC timers connect 1"
    [[ ${FAB_ROLE[$n]} == spine ]] && echo " neighbor FABRIC passive"
    for p in $(fabric_ports "$n"); do
      peer=${FAB_PEER[$n:$p]}
      [[ ${FAB_ROLE[${peer%%:*}]} == host ]] && continue
      # v6only: peer on the IPv6 link-local address even though the port has
      # a /31, so a swapped cable (mismatched /31s) still peers.
      echo " neighbor $p interface v6only peer-group FABRIC"
    done
    echo " address-family ipv4 unicast"
    for p in $(fabric_ports "$n"); do
      peer=${FAB_PEER[$n:$p]}
      [[ ${FAB_ROLE[${peer%%:*}]} == host ]] || continue
      echo "  network ${FAB_ADDR[$n:$p]}/31"
    done
    echo "  maximum-paths 8"
    echo "  neighbor FABRIC route-map FABRIC-IN in"
    echo " exit-address-family"
    # RFC 8326: routes marked GRACEFUL_SHUTDOWN (a netdiag drain with
    # drain_graceful_s) are least preferred, so traffic leaves them first.
    echo "bgp community-list standard GSHUT seq 5 permit graceful-shutdown"
    echo "route-map FABRIC-IN permit 10"
    echo " match community GSHUT"
    echo " set local-preference 0"
    echo "route-map FABRIC-IN permit 20"
  } >"$d/bgpd.conf"
  chown -R frr:frr "$d"
}

fabric_frr_dir() { echo "$FABRIC_RUN/frr-$1"; }

fabric_start_frr() {
  local n d
  for n in $(fabric_switches); do
    d=$(fabric_frr_dir "$n")
    mkdir -p "$d" && _fabric_write_frr_conf "$n" "$d" || return 1
    fabric_exec "$n" "$FABRIC_FRR_DIR/zebra" -d -z "$d/zserv.api" -i "$d/zebra.pid" \
      --vty_socket "$d" -f "$d/zebra.conf" >"$d/zebra.out" 2>&1 || { fabric_err "zebra in $n failed: $(cat "$d/zebra.out")"; return 1; }
  done
  for n in $(fabric_switches); do
    d=$(fabric_frr_dir "$n")
    fabric_exec "$n" "$FABRIC_FRR_DIR/bgpd" -d -z "$d/zserv.api" -i "$d/bgpd.pid" \
      --vty_socket "$d" -f "$d/bgpd.conf" >"$d/bgpd.out" 2>&1 || { fabric_err "bgpd in $n failed: $(cat "$d/bgpd.out")"; return 1; }
  done
  fabric_log "FRR (zebra, bgpd) started on $(fabric_switches | wc -l) switches"
}

fabric_vtysh() { local n=$1; shift; vtysh --vty_socket "$(fabric_frr_dir "$n")" -c "$*"; }

# Number of ECMP paths node $1's kernel has to prefix $2 (0: no route).
fabric_paths() {
  local out
  out=$(ip -n "$(fabric_ns "$1")" route show "$2" 2>/dev/null)
  [[ -z $out ]] && { echo 0; return; }
  local k; k=$(grep -c 'nexthop via' <<<"$out")
  (( k == 0 )) && k=1
  echo "$k"
}

# Paths every switch should have to every host prefix it does not own:
# leaves one per spine, spines one. Prints the first mismatch, if any.
_fabric_ecmp_mismatch() {
  local sw h p a prefix want have spines
  spines=$(fabric_nodes_with_role spine | wc -l)
  for h in $(fabric_hosts); do
    for p in $(fabric_ports "$h"); do
      a=${FAB_ADDR[$h:$p]}; prefix="${a%.*}.$(( ${a##*.} & ~1 ))/31"
      for sw in $(fabric_switches); do
        [[ ${FAB_PEER[$h:$p]%%:*} == "$sw" ]] && continue
        [[ ${FAB_ROLE[$sw]} == spine ]] && want=1 || want=$spines
        have=$(fabric_paths "$sw" "$prefix")
        (( have == want )) || { echo "$sw has $have of $want paths to $prefix"; return 0; }
      done
    done
  done
}

# Waits until the kernels' ECMP state is complete (not BGP session state).
fabric_wait_ecmp() {
  local timeout=${1:-60} t0=$SECONDS miss
  while :; do
    miss=$(_fabric_ecmp_mismatch)
    [[ -z $miss ]] && { fabric_log "ECMP complete after $((SECONDS - t0)) s"; return 0; }
    (( SECONDS - t0 >= timeout )) && { fabric_err "ECMP incomplete after ${timeout}s: $miss"; return 1; }
    sleep 0.5
  done
}

# --- lldpd ----------------------------------------------------------------

fabric_start_lldpd() {
  local n d
  for n in $(fabric_switches); do
    d=$FABRIC_RUN/lldpd-$n
    mkdir -p "$d"
    cat >"$d/lldpd.conf" <<EOF
configure system hostname $n
configure system interface pattern swp*
configure lldp portidsubtype ifname
configure lldp tx-interval 1
EOF
    # -d keeps it in the foreground (it then logs to stderr); ip netns
    # exec execs it, so $! is lldpd's own pid.
    ip netns exec "$(fabric_ns "$n")" lldpd -d -k -u "$d/lldpd.sock" -O "$d/lldpd.conf" \
      >"$d/lldpd.log" 2>&1 &
    echo $! >"$d/lldpd.pid"
  done
  fabric_log "lldpd started on $(fabric_switches | wc -l) switches"
}

# "system:port" neighbours lldpd of switch $1 sees, one "localport neighbour" a line.
fabric_lldp_neighbors() {
  lldpcli -u "$FABRIC_RUN/lldpd-$1/lldpd.sock" -f json0 show neighbors 2>/dev/null |
    jq -r '.lldp[0].interface[]? | "\(.name) \(.chassis[0].name[0].value):\(.port[0].id[0].value)"'
}

# Waits until every switch's lldpd sees on each switch-facing port only the
# neighbour that is cabled there now.
fabric_wait_lldp() {
  local timeout=${1:-30} t0=$SECONDS sw p peer bad
  while :; do
    bad=""
    for sw in $(fabric_switches); do
      local seen; seen=$(fabric_lldp_neighbors "$sw")
      for p in $(fabric_ports "$sw"); do
        peer=${FAB_PEER[$sw:$p]}
        [[ ${FAB_ROLE[${peer%%:*}]} == host ]] && continue
        # Exactly the cabled neighbour: after a re-plug the old one lingers
        # until its LLDP TTL runs out.
        [[ $(grep -- "^$p " <<<"$seen") == "$p $peer" ]] ||
          { bad="$sw:$p sees '$(grep -- "^$p " <<<"$seen" | cut -d' ' -f2 | tr '\n' ' ')', cabled to $peer"; break 2; }
      done
    done
    [[ -z $bad ]] && { fabric_log "LLDP neighbours as cabled after $((SECONDS - t0)) s"; return 0; }
    (( SECONDS - t0 >= timeout )) && { fabric_err "LLDP after ${timeout}s: $bad"; return 1; }
    sleep 1
  done
}

# --- faults -----------------------------------------------------------------

_fabric_loss_table() { local t="nd_loss_${1}_${2}"; echo "${t//[^A-Za-z0-9_]/_}"; }

# Drops PCT % of the frames leaving node:port (an nftables netdev egress rule:
# this kernel has no netem). Only that direction of the link loses.
fabric_loss_add() {
  local n=$1 p=$2 pct=${3:-3} t
  t=$(_fabric_loss_table "$n" "$p")
  fabric_exec "$n" nft -f - <<EOF || { fabric_err "nft loss rule on $n:$p"; return 1; }
table netdev $t {
  chain egress {
    type filter hook egress device "$p" priority 0; policy accept;
    numgen random mod 100 < $pct counter drop
  }
}
EOF
  fabric_log "loss $pct % on $n:$p -> ${FAB_PEER[$n:$p]}"
}

fabric_loss_del() {
  local t; t=$(_fabric_loss_table "$1" "$2")
  fabric_exec "$1" nft delete table netdev "$t" && fabric_log "loss removed from $1:$2"
}

# Frames the loss rule on node:port dropped so far.
fabric_loss_dropped() {
  fabric_exec "$1" nft list table netdev "$(_fabric_loss_table "$1" "$2")" 2>/dev/null |
    sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | head -n1
}

# Takes port node:port administratively down (or up) and, as a direct cable
# would, drops (or restores) the carrier its neighbour sees.
fabric_link_set() {  # node port up|down
  local x="$1:$2" state=$3
  [[ -n ${FAB_PEER[$x]:-} ]] || { fabric_err "link_set: unknown port $x"; return 1; }
  fabric_exec "$1" ip link set dev "$2" "$state" || return 1
  _fabric_panel link set dev "${FAB_PANEL[${FAB_PEER[$x]}]}" "$state" || return 1
  fabric_log "link $x ($x <-> ${FAB_PEER[$x]}) $state"
}

# Re-plugs two cables: the cable in port X:p and the one in port Y:q trade
# places, so X:p's old neighbour U:u ends in Y:q and Y:q's old neighbour V:v
# in X:p. On the panel, X's and Y's panel ends trade bridges; all four ends
# lose carrier for a moment, as when cables are pulled and plugged. Each port
# keeps its configuration (its /31), as a switch port does. Routing still
# works: BGP peers over IPv6 link-local addresses (v6only), so sessions
# re-form over the new cabling; the /31s of X:p and Y:q no longer match
# their new neighbours' (only traceroute hop addresses show them). Running it
# again with the same ports restores the cabling.
fabric_swap_cables() {
  local x=$1 y=$2 u v bx by e
  [[ -n ${FAB_PEER[$x]:-} && -n ${FAB_PEER[$y]:-} ]] || { fabric_err "swap: unknown port $x or $y"; return 1; }
  [[ $x != "$y" && ${FAB_PEER[$x]} != "$y" ]] || { fabric_err "swap: $x and $y are one cable"; return 1; }
  u=${FAB_PEER[$x]}; v=${FAB_PEER[$y]}
  bx=$(_fabric_panel -o link show dev "${FAB_PANEL[$x]}" | sed -n 's/.* master \([^ ]*\) .*/\1/p')
  by=$(_fabric_panel -o link show dev "${FAB_PANEL[$y]}" | sed -n 's/.* master \([^ ]*\) .*/\1/p')
  [[ -n $bx && -n $by ]] || { fabric_err "swap: cannot find the panel bridges of $x and $y"; return 1; }
  for e in "$x" "$y" "$u" "$v"; do _fabric_panel link set dev "${FAB_PANEL[$e]}" down; done
  _fabric_panel link set dev "${FAB_PANEL[$x]}" master "$by" || return 1
  _fabric_panel link set dev "${FAB_PANEL[$y]}" master "$bx" || return 1
  sleep 0.2
  for e in "$x" "$y" "$u" "$v"; do _fabric_panel link set dev "${FAB_PANEL[$e]}" up; done
  FAB_PEER[$x]=$v; FAB_PEER[$v]=$x; FAB_PEER[$y]=$u; FAB_PEER[$u]=$y
  fabric_log "swapped cables: $u now in $y, $v now in $x"
}

# --- teardown -----------------------------------------------------------------

# Kills every process running in our namespaces (daemons, agents, the
# analyzer: all started by us) by pid, then deletes the namespaces: the
# management and patch ones and nd-<node> of every loaded node (fabric_create refuses to
# run over existing ones, so these are ours).
fabric_teardown() {
  local ns n pids
  local -a all=()
  for ns in $(fabric_namespaces); do
    [[ -e /run/netns/$ns ]] && all+=("$ns")
  done
  ((${#all[@]})) || return 0
  for ns in "${all[@]}"; do
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    [[ -n ${pids// /} ]] && kill -TERM $pids 2>/dev/null
  done
  for _ in $(seq 1 30); do
    pids=""
    for ns in "${all[@]}"; do pids+=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' '); done
    [[ -z ${pids// /} ]] && break
    sleep 0.1
  done
  if [[ -n ${pids// /} ]]; then
    kill -KILL $pids 2>/dev/null
    # Until they have exited (up to 5 s), so the namespaces go with them.
    local p left
    for _ in $(seq 1 50); do
      left=""
      for p in $pids; do
        [[ -d /proc/$p && $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) != Z ]] && left+="$p "
      done
      [[ -z $left ]] && break
      sleep 0.1
    done
  fi
  for ns in "${all[@]}"; do ip netns del "$ns" 2>/dev/null; done
  fabric_log "teardown: killed every process in and deleted ${#all[@]} namespaces"
}
