#!/usr/bin/env bash
# Whole-process ingest benchmark of the analyzer daemon over gRPC: one
# `netdiag analyzer` and `netdiag simulate --live --speed 0` streaming a
# simulated fabric from many concurrent synthetic agents (one gRPC stream
# and connection each; AGENTS 0 is one per node, as in a deployment, else
# that many grouped sim-<i> agents, which the analyzer accepts with
# --accept-sim-agents for the same count). Reports the records/s the
# analyzer acknowledged (each ack is sent after the batch is in the engine),
# the analyzer's own CPU time per record acknowledged (utime + stime from
# /proc/PID/stat, which holds even with the load generator on the same
# cores), its peak RSS, threads and file descriptors, and the load
# generator's own CPU per record (it shares the machine). At --speed 0 the
# synthetic clocks run up to DURATION_S ahead of the analyzer's, so its
# --max-future is set past that (else the records beyond 60 s would be
# rejected as `future`: the `rejected` field must read 0). They can also
# fall behind it: where the pair ingests less than the fabric's real-time
# rate, a run longer than about the late window (30 s) turns records
# `too_late`, which is a backlog, not a live run. A sustained live run is
# SPEED=1 with a plan the pair keeps up with in real time (SCENARIO).
#
# usage: bench/live_ingest.sh [BUILD_DIR] [SIZE] [AGENTS] [DURATION_S]
#   ANALYZER_ARGS (environment): more flags for the analyzer, e.g.
#   "--ingest-queue-records 4096" to run it under backpressure.
#   SPEED (environment): the generator's --speed, default 0 (no pacing).
#   SCENARIO (environment): a scenario file for the generator (its budget
#   sets the plan and so the real-time rate; the fabric stays SIZE's).
#   BATCH_INTERVAL (environment): each agent's seconds of telemetry per
#   batch, default 1 (the agent's default); give the analyzer a --delay
#   above it (ANALYZER_ARGS) so its passes wait for the batches.
#   SIZE: small (leaf-spine 4x16x16, 256 host ports), medium (rail, 12,800
#   host ports) or 100k (rail, 102,400 host ports); default medium.
set -euo pipefail
build=${1:-build}
size=${2:-medium}
agents=${3:-64}
duration=${4:-30}
netdiag="$build/cli/netdiag"
work=$(mktemp -d /tmp/netdiag-live-ingest.XXXXXX)
analyzer_pid=
cleanup() {
  [ -n "$analyzer_pid" ] && kill -TERM "$analyzer_pid" 2>/dev/null && wait "$analyzer_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

case "$size" in
  small) gen=(leaf-spine --spines 4 --leaves 16 --hosts-per-leaf 16) ;;
  medium) gen=(rail --sus 50 --hosts-per-su 32 --rails 8 --spines 32 --leaf-uplinks 32 --cores 16) ;;
  100k) gen=(rail --sus 400 --hosts-per-su 32 --rails 8 --spines 32 --leaf-uplinks 32 --cores 16) ;;
  *) echo "unknown size $size" >&2; exit 2 ;;
esac
"$netdiag" topo generate "${gen[@]}" -o "$work/fabric.yaml" >&2

"$netdiag" analyzer --topology "$work/fabric.yaml" \
  --listen 127.0.0.1:0 --web.listen-address 127.0.0.1:0 --db '' --max-future $((duration + 60)) \
  $([ "$agents" -gt 0 ] && echo --accept-sim-agents "$agents") ${ANALYZER_ARGS:-} 2>"$work/analyzer.err" &
analyzer_pid=$!
for _ in $(seq 600); do
  grep -q 'listening:' "$work/analyzer.err" 2>/dev/null && break
  sleep 0.1
done
grpc=$(grep -o 'grpc=127.0.0.1:[0-9]*' "$work/analyzer.err" | cut -d= -f2 || true)
# Start-up (topology, plan sizing, engine set-up) apart from the load: the
# CPU spent once the plan is sized, before the first record.
for _ in $(seq 600); do
  grep -q 'probe plan:' "$work/analyzer.err" 2>/dev/null && break
  sleep 0.1
done
ticks_start=$(sed 's/^.*) //' "/proc/$analyzer_pid/stat" | awk '{print $12 + $13}')
[ -n "$grpc" ] || { cat "$work/analyzer.err" >&2; exit 1; }

# The analyzer's threads and open file descriptors (one per agent
# connection), sampled while the load runs; the peak is reported.
# Its RSS goes to rss.log every 5 s (seconds since the load began, KiB),
# kept at $RSS_LOG when set: flat or growing over a long run.
( peak_threads=0; peak_fds=0; n=0
  while kill -0 "$analyzer_pid" 2>/dev/null && [ ! -e "$work/done" ]; do
    t=$(awk '/^Threads:/ {print $2}' "/proc/$analyzer_pid/status" 2>/dev/null || echo 0)
    f=$(ls "/proc/$analyzer_pid/fd" 2>/dev/null | wc -l)
    [ "${t:-0}" -gt "$peak_threads" ] && peak_threads=$t
    [ "$f" -gt "$peak_fds" ] && peak_fds=$f
    echo "$peak_threads $peak_fds" >"$work/peaks"
    if [ $((n % 10)) -eq 0 ]; then
      echo "$((n / 2)) $(awk '/^VmRSS:/ {print $2}' "/proc/$analyzer_pid/status" 2>/dev/null)" >>"$work/rss.log"
    fi
    n=$((n + 1))
    sleep 0.5
  done ) &
sampler=$!
"$netdiag" simulate --topology "$work/fabric.yaml" ${SCENARIO:+--scenario "$SCENARIO"} --duration "$duration" \
  --live "$grpc" --speed "${SPEED:-0}" --batch-interval "${BATCH_INTERVAL:-1}" $([ "$agents" -gt 0 ] && echo --agents "$agents") --live-timeout 300 2>&1 | tee "$work/simulate.err" >&2
touch "$work/done"; wait "$sampler" || true
read -r peak_threads peak_fds <"$work/peaks" || true
streams=$(grep -o 'over [0-9,]* agent stream' "$work/simulate.err" | tr -d ',' | awk '{print $2}')

rss=$(awk '/VmHWM/ {print $2}' "/proc/$analyzer_pid/status")
# Fields 14 and 15 of /proc/PID/stat (after the parenthesized name): utime, stime.
ticks=$(sed 's/^.*) //' "/proc/$analyzer_pid/stat" | awk '{print $12 + $13}')
# The engine thread's share (it owns the engine, dedup and the reorder
# buffer, and publishes): the rest is the streams' decoding and gRPC.
engine_ticks=0
for task in /proc/$analyzer_pid/task/*; do
  [ "$(cat "$task/comm" 2>/dev/null)" = nd-engine ] || continue
  engine_ticks=$(sed 's/^.*) //' "$task/stat" | awk '{print $12 + $13}')
done
rate=$(grep -o '([0-9,]* records/s acknowledged)' "$work/simulate.err" | tr -d '(),' | awk '{print $1}')
records=$(grep -o 'delivered [0-9,]* records' "$work/simulate.err" | tr -d ',' | awk '{print $2}')
# The load generator's own CPU (simulating, encoding, its streams; start-up
# included), which shares the machine with the analyzer.
gen_cpu_s=$(grep -o 'generator CPU [0-9.]* s' "$work/simulate.err" | awk '{print $3}' || true)

http=$(grep -o 'http=http://[0-9.:]*' "$work/analyzer.err" | cut -d= -f2 || true)
# Nothing may be dropped, rejected or aged out: the analyzer's own counters
# say so. Every acknowledged record is in the engine; the counters follow
# at the next tick, so wait (bounded) until they account for all of them.
for _ in $(seq 100); do
  curl -s "$http/metrics" >"$work/metrics.txt" || true
  ingested=$(awk '/^netdiag_ingest_records_total/ {n += $2} END {print n + 0}' "$work/metrics.txt")
  rejected=$(awk '/^netdiag_ingest_(malformed|future|not_authorized)_records_total / {n += $2} END {print n + 0}' "$work/metrics.txt")
  [ $((ingested + rejected)) -ge "${records:-0}" ] && break
  sleep 0.2
done
too_late=$(awk '/^netdiag_ingest_too_late_records_total / {print $2}' "$work/metrics.txt")
# Passes and how many took over 1 s (the pass-duration histogram).
passes=$(awk '/^netdiag_engine_pass_duration_seconds_count / {print $2}' "$work/metrics.txt")
passes_over_1s=$(awk -v n="${passes:-0}" '/^netdiag_engine_pass_duration_seconds_bucket\{le="1(\.0+)?"\} / {print n - $2}' "$work/metrics.txt")
# The longest pass is at most the first bucket that holds every pass.
pass_max_le=$(awk -v n="${passes:-0}" '/^netdiag_engine_pass_duration_seconds_bucket\{/ && $2 + 0 >= n + 0 && !done { match($0, /le="[^"]*"/); print substr($0, RSTART + 4, RLENGTH - 5); done = 1 }' "$work/metrics.txt")
# Peak RSS over the first and the second half of the load: flat or growing.
rss_halves=$(awk '{ t[NR] = $1; r[NR] = $2 } END { h = t[NR] / 2; for (i = 1; i <= NR; i++) { if (t[i] <= h) { if (r[i] > a) a = r[i] } else if (r[i] > b) b = r[i] } print (a + 0) " " (b + 0) }' "$work/rss.log")
[ -n "${RSS_LOG:-}" ] && cp "$work/rss.log" "$RSS_LOG"
blocked=$(awk '/^netdiag_ingest_queue_blocked_seconds_total / {print $2}' "$work/metrics.txt")
kill -TERM "$analyzer_pid"; wait "$analyzer_pid" || true; analyzer_pid=
cpu_us=$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$records" \
  'BEGIN { if (n > 0) printf "%.2f", t / hz * 1e6 / n; else print "n/a" }')
load_us=$(awk -v t="$((ticks - ticks_start))" -v hz="$(getconf CLK_TCK)" -v n="$records" \
  'BEGIN { if (n > 0) printf "%.2f", t / hz * 1e6 / n; else print "n/a" }')
engine_us=$(awk -v t="$engine_ticks" -v hz="$(getconf CLK_TCK)" -v n="$records" \
  'BEGIN { if (n > 0) printf "%.2f", t / hz * 1e6 / n; else print "n/a" }')
gen_us=$(awk -v c="${gen_cpu_s:-0}" -v n="$records" \
  'BEGIN { if (n > 0 && c > 0) printf "%.2f", c * 1e6 / n; else print "n/a" }')
startup_s=$(awk -v t="$ticks_start" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }')
echo "live_ingest size=$size speed=${SPEED:-0} batch_interval_s=${BATCH_INTERVAL:-1} scenario=${SCENARIO:-default} agents=$agents streams=${streams:-n/a} analyzer_peak_threads=${peak_threads:-n/a} analyzer_peak_fds=${peak_fds:-n/a} duration_s=$duration records=$records records_per_s=$rate analyzer_cpu_us_per_record=$cpu_us analyzer_startup_cpu_s=$startup_s analyzer_cpu_us_per_record_after_startup=$load_us engine_thread_cpu_us_per_record=$engine_us generator_cpu_us_per_record=$gen_us analyzer_peak_rss_kib=$rss ingested=${ingested:-n/a} rejected=${rejected:-n/a} too_late=${too_late:-n/a} queue_blocked_s=${blocked:-n/a} passes=${passes:-n/a} passes_over_1s=${passes_over_1s:-n/a} longest_pass_le_s=${pass_max_le:-n/a} rss_peak_kib_first_half=${rss_halves% *} rss_peak_kib_second_half=${rss_halves#* }"
