# shellcheck shell=bash
# Step reporting, skipping and checks shared by the namespaced tests
# (fabric_test.sh, e2e.sh). Source after lib/fabric.sh.

E2E_PASSED=0
E2E_FAILED=0
E2E_T0=$SECONDS

e2e_skip() { echo "SKIP: $*"; exit 77; }

# Skips (exit 77) unless this can build a namespaced fabric: root, ip netns,
# FRR, lldpd, nftables and the small tools the scripts use.
e2e_require_fabric() {
  [[ $(id -u) == 0 ]] || e2e_skip "needs root (network namespaces, veth pairs, FRR); run as root or in CI's root job"
  command -v ip >/dev/null || e2e_skip "iproute2 (ip) not installed"
  local probe="nd-probe-$$"
  ip netns add "$probe" 2>/dev/null || e2e_skip "'ip netns add' does not work here (no network namespace support?)"
  ip netns del "$probe"
  local need
  for need in "$FABRIC_FRR_DIR/zebra" "$FABRIC_FRR_DIR/bgpd"; do
    [[ -x $need ]] || e2e_skip "FRR not installed ($need missing; Debian package frr)"
  done
  for need in vtysh lldpd lldpcli nft jq curl sysctl flock; do
    command -v "$need" >/dev/null || e2e_skip "$need not installed"
  done
}

# One namespaced test at a time on this machine: each runs dozens of daemons,
# and their timing checks assume a fabric to themselves. (Names no longer
# clash: each run has its own namespace prefix, fabric_use_run_prefix.)
e2e_lock() {
  exec {E2E_LOCK_FD}>/run/lock/netdiag-e2e.lock
  flock -w "${1:-900}" "$E2E_LOCK_FD" || { echo "FAIL: another namespaced netdiag test holds /run/lock/netdiag-e2e.lock"; exit 1; }
}

e2e_elapsed() { echo "$((SECONDS - E2E_T0))s"; }

# e2e_check NAME EXPECTED SEEN OK(0|1)
e2e_result() {
  local name=$1 expected=$2 seen=$3 ok=$4
  if [[ $ok == 0 ]]; then
    E2E_PASSED=$((E2E_PASSED + 1))
    printf 'PASS [%s] %s: expected %s; seen %s\n' "$(e2e_elapsed)" "$name" "$expected" "$seen"
  else
    E2E_FAILED=$((E2E_FAILED + 1))
    printf 'FAIL [%s] %s: expected %s; seen %s\n' "$(e2e_elapsed)" "$name" "$expected" "$seen"
  fi
}

e2e_summary() {
  echo "== $E2E_PASSED passed, $E2E_FAILED failed in $(e2e_elapsed)"
  ((E2E_FAILED == 0))
}

# Pings every host from every other host once; prints the failing pairs.
e2e_ping_failures() {
  local s d bad=""
  for s in $(fabric_hosts); do
    for d in $(fabric_hosts); do
      [[ $s == "$d" ]] && continue
      fabric_exec "$s" ping -c1 -W1 -q "$(fabric_host_addr "$d")" >/dev/null 2>&1 || bad+="$s->$d "
    done
  done
  echo "$bad"
}

# Host pairs as "src dst" lines.
e2e_host_pairs() {
  local s d
  for s in $(fabric_hosts); do for d in $(fabric_hosts); do [[ $s != "$d" ]] && echo "$s $d"; done; done
}
