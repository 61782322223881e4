#!/usr/bin/env bash
# Installs the Debian 12 packages netdiag needs to build and test.
# Idempotent and silent when everything is already present.
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build pkg-config ccache clang-format-14
  # libFuzzer harnesses (fuzz/) and sanitizer runtimes: scripts/fuzz_tsan.sh
  clang-14 libclang-rt-14-dev
  # libraries (see docs/architecture.md for who uses what)
  libyaml-dev libyaml-cpp-dev nlohmann-json3-dev libsqlite3-dev libcli11-dev libpcap-dev
  prometheus-cpp-dev libcpp-httplib-dev
  # signed drain actions (actuator/): HMAC-SHA256
  libssl-dev
  # the agents' wire (proto/)
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libabsl-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev sqlite3
  libsimdjson-dev
  # integration and end-to-end tests: real servers and a namespaced fabric
  prometheus prometheus-alertmanager frr lldpd nftables iproute2 curl jq procps iputils-ping
  # the agents' bus (bus/): nats.c to build, nats-server for its tests
  libnats-dev nats-server
  # SNMP: net-snmp for the poller (libsnmp-dev), snmpd in the switch namespaces, snmp's client tools
  snmpd snmp libsnmp-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "netdiag: missing packages: ${missing[*]}; run this as root (or install them)" >&2
  exit 2
fi
echo "netdiag: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
