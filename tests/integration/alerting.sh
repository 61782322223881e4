#!/usr/bin/env bash
# Integration test with the real servers: netdiag analyzer fed by
# `netdiag simulate --live` with an injected gray link, Debian's prometheus
# scraping it with rules/ loaded, prometheus-alertmanager routing to a local
# webhook sink. Asserts: the NetdiagLinkFaultLocalized alert for the injected
# link arrives with its labels (and drain advice), the dashboards' queries all
# run and the key panels return data during the fault, `promtool check
# metrics` accepts a live scrape, `netdiag locate --analyzer` names the link,
# and the alert resolves after the fault ends. Everything on 127.0.0.1; all
# processes stopped and the temp dir removed on exit.
#
# usage: alerting.sh NETDIAG_BINARY [SOURCE_DIR]
# Exit 0 pass, 1 fail, 77 skipped (a server binary missing).
set -euo pipefail

NETDIAG=${1:?usage: alerting.sh NETDIAG_BINARY [SOURCE_DIR]}
SRC=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
START=$(date +%s)

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; dump_logs; exit 1; }
log() { printf '[%4ds] %s\n' "$(( $(date +%s) - START ))" "$*"; }

for bin in prometheus prometheus-alertmanager promtool python3 curl; do
  command -v "$bin" >/dev/null || skip "$bin not installed (Debian packages prometheus, prometheus-alertmanager, python3, curl)"
done
[ -x "$NETDIAG" ] || skip "netdiag binary $NETDIAG not built"
"$NETDIAG" analyzer --help >/dev/null 2>&1 || skip "this netdiag has no 'analyzer' command"
"$NETDIAG" simulate --help 2>/dev/null | grep -q -- '--live' || skip "this netdiag has no 'simulate --live'"

TMP=$(mktemp -d /tmp/netdiag-alerting.XXXXXX)
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
dump_logs() {
  local f
  for f in "$TMP"/*.log; do
    [ -s "$f" ] && { echo "---- $(basename "$f") (last 15 lines)"; tail -n 15 "$f"; } >&2
  done
  return 0
}
start() {  # start NAME CMD...: runs in the background, logs to $TMP/NAME.log
  local name=$1; shift
  "$@" >"$TMP/$name.log" 2>&1 &
  PIDS+=($!)
}
wait_http() {  # wait_http URL SECONDS
  local i
  for ((i = 0; i < $2 * 5; i++)); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

# Free loopback ports for the five listeners.
read -r P_GRPC P_WEB P_PROM P_AM P_SINK < <(python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
)

# ---- the fabric and the fault -------------------------------------------------
"$NETDIAG" topo generate leaf-spine --spines 2 --leaves 3 --hosts-per-leaf 2 -o "$TMP/fabric.yaml" >/dev/null
LINK_BOTH=$("$NETDIAG" drain-plan --topology "$TMP/fabric.yaml" leaf2:swp3 --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["link"])')
LINK=${LINK_BOTH/<->/->}            # leaf2:swp3->spine1:swp2
DEV=${LINK%%:*}; REST=${LINK#*:}; IFACE=${REST%%->*}
NB=${LINK#*->}; NDEV=${NB%%:*}; NIFACE=${NB#*:}
FAULT_END=45
cat >"$TMP/scenario.yaml" <<YAML
name: alerting_gray_link
topology: {generate: leaf-spine, spines: 2, leaves: 3, hosts_per_leaf: 2}
duration_s: 600
window_s: 5
noise: {background_loss: 1.0e-5, path_unknown: 0.2, missing_records: 0.0}
faults:
  - kind: link_loss
    link: $LINK
    loss: 0.05
    onset: 10
    end: $FAULT_END
YAML

# ---- the webhook sink, Alertmanager, the analyzer, Prometheus ---------------------
cat >"$TMP/sink.py" <<'PY'
import http.server, sys
out = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(out, "ab") as f:
            f.write(body.replace(b"\n", b" ") + b"\n")
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
: >"$TMP/alerts.jsonl"
start sink python3 "$TMP/sink.py" "$P_SINK" "$TMP/alerts.jsonl"

cat >"$TMP/alertmanager.yml" <<YAML
route:
  receiver: sink
  group_by: [alertname, incident]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1m
receivers:
  - name: sink
    webhook_configs:
      - url: http://127.0.0.1:$P_SINK/
        send_resolved: true
YAML
start alertmanager prometheus-alertmanager --config.file="$TMP/alertmanager.yml" \
  --storage.path="$TMP/am" --web.listen-address="127.0.0.1:$P_AM" --cluster.listen-address=

start analyzer "$NETDIAG" analyzer --topology "$TMP/fabric.yaml" --listen "127.0.0.1:$P_GRPC" \
  --web.listen-address "127.0.0.1:$P_WEB" --db "$TMP/netdiag.db" --resolve-after 10 --delay 1
wait_http "http://127.0.0.1:$P_WEB/readyz" 30 || fail "analyzer not ready on 127.0.0.1:$P_WEB"

cat >"$TMP/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $SRC/rules/netdiag.rules.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:$P_AM']
scrape_configs:
  - job_name: netdiag-analyzer
    static_configs:
      - targets: ['127.0.0.1:$P_WEB']
YAML
promtool check config "$TMP/prometheus.yml" >/dev/null || fail "promtool check config"
start prometheus prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prom" \
  --web.listen-address="127.0.0.1:$P_PROM"
wait_http "http://127.0.0.1:$P_PROM/-/ready" 30 || fail "prometheus not ready"
wait_http "http://127.0.0.1:$P_AM/-/ready" 30 || fail "alertmanager not ready"
log "servers up: analyzer :$P_WEB, prometheus :$P_PROM, alertmanager :$P_AM, sink :$P_SINK"

start simulate "$NETDIAG" simulate --scenario "$TMP/scenario.yaml" --topology "$TMP/fabric.yaml" \
  --seed 1 --live "127.0.0.1:$P_GRPC" --speed 1
log "simulating a 5% gray link on $LINK from t=10 s to t=$FAULT_END s"

# ---- the alert fires ----------------------------------------------------------
# alert_status STATUS: prints the matching alert's labels when the sink got one.
alert_status() {
  python3 - "$TMP/alerts.jsonl" "$1" "$DEV" "$IFACE" "$NDEV" "$NIFACE" <<'PY'
import json, sys
path, status, dev, iface, ndev, niface = sys.argv[1:]
for line in open(path):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    for a in msg.get("alerts", []):
        l = a.get("labels", {})
        if (l.get("alertname") == "NetdiagLinkFaultLocalized" and a.get("status") == status
                and (l.get("device"), l.get("interface"), l.get("neighbor_device"), l.get("neighbor_interface"))
                == (dev, iface, ndev, niface)):
            print(json.dumps({"labels": l, "annotations": a.get("annotations", {})}))
            sys.exit(0)
sys.exit(1)
PY
}
FIRED=""
for ((i = 0; i < 120; i++)); do
  FIRED=$(alert_status firing) && break
  sleep 1
done
[ -n "$FIRED" ] || fail "no firing NetdiagLinkFaultLocalized alert for $LINK within 120 s; got: $(head -c 2000 "$TMP/alerts.jsonl")"
log "alert firing: $FIRED"
python3 - "$FIRED" <<'PY' || fail "alert labels/annotations incomplete"
import json, sys
a = json.loads(sys.argv[1])
l, an = a["labels"], a["annotations"]
assert l["severity"] == "critical", l
assert l["kind"] in ("link_loss", "link_blackhole", "link_corruption"), l
assert l["incident"].startswith("inc-"), l
for k in ("summary", "description", "runbook_url", "drain"):
    assert an.get(k), ("missing annotation", k, an)
assert "docs/runbook.md#netdiaglinkfaultlocalized" in an["runbook_url"], an
assert an["drain"].startswith("safe: leaf2 keeps 1 of 2 uplinks"), an["drain"]
PY

# ---- during the fault: dashboards, promtool, locate ------------------------------
sleep 3  # a few scrapes for rate() windows
python3 "$SRC/tests/integration/dashboard_queries.py" --prometheus "http://127.0.0.1:$P_PROM" \
  --dashboards "$SRC/deploy/grafana/dashboards" \
  --key-panel "netdiag-fabric/Localized link faults" \
  --key-panel "netdiag-fabric/Suspect links with evidence" \
  --key-panel "netdiag-fabric/Link health by tier" \
  --key-panel "netdiag-fabric/Links affected by tier and pod" \
  --key-panel "netdiag-fabric/Open incidents by kind and state" \
  --key-panel "netdiag-fabric/Link faults over time" \
  --key-panel "netdiag-agents/Agents" \
  --key-panel "netdiag-agents/Probe coverage" \
  --key-panel "netdiag-analyzer/Records ingested per second" \
  --key-panel "netdiag-analyzer/Engine lag" || fail "dashboard queries"
log "dashboard queries valid, key panels have data"

curl -fsS "http://127.0.0.1:$P_WEB/metrics" >"$TMP/scrape.txt" || fail "scrape /metrics"
promtool check metrics <"$TMP/scrape.txt" >"$TMP/promtool.log" 2>&1 || fail "promtool check metrics: $(cat "$TMP/promtool.log")"
[ ! -s "$TMP/promtool.log" ] || fail "promtool check metrics findings: $(cat "$TMP/promtool.log")"
log "promtool check metrics: live scrape clean ($(grep -vc '^#' "$TMP/scrape.txt") samples)"

set +e
"$NETDIAG" locate --analyzer "http://127.0.0.1:$P_WEB" >"$TMP/locate.txt" 2>"$TMP/locate.log"
rc=$?
set -e
[ "$rc" = 1 ] || fail "netdiag locate exit $rc (want 1): $(cat "$TMP/locate.txt" "$TMP/locate.log")"
grep -q "$DEV:$IFACE -> $NDEV:$NIFACE" "$TMP/locate.txt" || fail "locate does not name $LINK: $(cat "$TMP/locate.txt")"
log "netdiag locate --analyzer names the link:"
sed 's/^/    /' "$TMP/locate.txt"

# ---- the fault ends: the alert resolves -------------------------------------------
# The engine forgets evidence after its horizon (180 s), then waits
# --resolve-after (10 s) of clean passes.
for ((i = 0; i < 330; i++)); do
  RESOLVED=$(alert_status resolved) && break
  RESOLVED=""
  sleep 1
done
[ -n "$RESOLVED" ] || fail "the alert for $LINK did not resolve"
log "alert resolved"
echo "PASS: alerting integration in $(( $(date +%s) - START )) s"
