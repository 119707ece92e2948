#!/usr/bin/env bash
# make bench-peers: Kingfisher next to its peers, one run, one machine, one workload —
# 1 KiB appends, acknowledged once durable, by 1, 8 and 50 producers with one append in flight
# each. Peers (installed from Debian when missing):
#   redis    redis-server --appendonly yes --appendfsync always, driven by redis-benchmark XADD
#   etcd     one member (Raft + its WAL fsync), Puts
#   nats     nats-server JetStream, file storage; sync_interval "always" when the server
#            accepts it (its default syncs every 2 minutes: acks before the disk has the data,
#            printed as such)
# Kingfisher: `kingfisher run standalone` (local backend) through the client library
# (bench/peers_bench.cc), driven like redis-benchmark (one thread keeping every producer's
# append in flight) and, as kingfisher-threads, by a thread per producer calling AppendSync.
# Prints a table with each system's figures and the ratio to Redis. The VM's speed drifts from
# one minute to the next, so Kingfisher and Redis then run PEERS_ROUNDS - 1 more times each,
# alternating, and the ratios of every round are printed with their median.
# Usage: bench/peers.sh [BUILD_DIR]
#   env: PEERS_MESSAGES (20000), PEERS_PRODUCERS ("1 8 50"), PEERS_ROUNDS (3)
set -euo pipefail
BUILD_DIR="${1:-build}"
BIN="$BUILD_DIR/bin"
MESSAGES="${PEERS_MESSAGES:-20000}"
PRODUCERS="${PEERS_PRODUCERS:-1 8 50}"
ROUNDS="${PEERS_ROUNDS:-3}"
PAYLOAD_BYTES=1024

need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-benchmark >/dev/null || need+=(redis-tools)
command -v etcd >/dev/null || need+=(etcd-server)
command -v nats-server >/dev/null || need+=(nats-server)
if ((${#need[@]})); then
  echo "installing ${need[*]} (apt)" >&2
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}" >&2
fi
[[ -x "$BIN/kingfisher" && -x "$BIN/peers_bench" ]] || {
  echo "build first: cmake --build $BUILD_DIR --target kingfisher peers_bench" >&2; exit 1; }

WORK=$(mktemp -d "$(realpath "$BUILD_DIR")/peers.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() {  # a command that succeeds once the server is up, bounded
  for _ in $(seq 1 200); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "server did not come up: $*" >&2; exit 1
}

KF_PORT=$(free_port); KF_HTTP=$(free_port)
"$BIN/kingfisher" run standalone --data-dir "$WORK/kf" --listen "127.0.0.1:$KF_PORT" \
  --http-listen "127.0.0.1:$KF_HTTP" >"$WORK/kf.log" 2>&1 &
PIDS+=($!)
wait_for curl -sf "http://127.0.0.1:$KF_HTTP/healthz"

REDIS_PORT=$(free_port)
mkdir -p "$WORK/redis"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --appendonly yes --appendfsync always \
  --save "" --dir "$WORK/redis" >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
wait_for redis-cli -p "$REDIS_PORT" ping

ETCD_PORT=$(free_port); ETCD_PEER=$(free_port)
etcd --data-dir "$WORK/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-cluster "default=http://127.0.0.1:$ETCD_PEER" >"$WORK/etcd.log" 2>&1 &
PIDS+=($!)
wait_for curl -sf "http://127.0.0.1:$ETCD_PORT/health"

NATS_PORT=$(free_port)
NATS_NOTE="sync every write"
start_nats() {  # $1: extra jetstream setting
  cat >"$WORK/nats.conf" <<EOF
listen: 127.0.0.1:$NATS_PORT
jetstream { store_dir: "$WORK/nats" $1 }
EOF
  nats-server -c "$WORK/nats.conf" >"$WORK/nats.log" 2>&1 &
  NATS_PID=$!
  for _ in $(seq 1 50); do
    grep -q "Server is ready" "$WORK/nats.log" && return 0
    kill -0 "$NATS_PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
if ! start_nats 'sync_interval: "always"'; then
  kill "$NATS_PID" 2>/dev/null || true
  NATS_NOTE="ACKS BEFORE FSYNC: this nats-server has no sync_interval always"
  start_nats "" || { echo "nats-server did not start" >&2; cat "$WORK/nats.log" >&2; exit 1; }
fi
PIDS+=($NATS_PID)

PAYLOAD=$(head -c "$PAYLOAD_BYTES" /dev/zero | tr '\0' 'p')
RESULTS="$WORK/results"
PAIRS="$WORK/pairs"  # the kingfisher and redis lines of every round, "round=R " first
FLUSHES="$WORK/flushes"  # per Kingfisher round: producers, its WAL flushes and their seconds
kf_flush_totals() {  # "<flushes> <seconds>" from the server's kf_wal_flush_duration_seconds
  curl -sf "http://127.0.0.1:$KF_HTTP/metrics" |
    awk '/^kf_wal_flush_duration_seconds_count/ {c += $NF} /^kf_wal_flush_duration_seconds_sum/ {s += $NF}
         END {printf "%d %.9f\n", c, s}'
}
kingfisher_run() {  # $1: producers
  local before after
  before=$(kf_flush_totals)
  "$BIN/peers_bench" --system kingfisher --endpoint "127.0.0.1:$KF_PORT" --producers "$1" \
    --messages "$MESSAGES" --payload-bytes "$PAYLOAD_BYTES"
  after=$(kf_flush_totals)
  echo "$1 $before $after" >>"$FLUSHES"
}
redis_run() {  # $1: producers; redis-benchmark --csv: "test","rps","avg","min","p50","p95","p99","max" (ms)
  redis-benchmark -p "$REDIS_PORT" -c "$1" -n "$MESSAGES" --csv XADD peers '*' f "$PAYLOAD" |
    awk -F'","' -v n="$1" 'NR==2 {gsub(/"/,"",$8); printf "redis producers=%s messages=0 seconds=0 per_s=%.0f p50_ms=%s p99_ms=%s\n", n, $2, $5, $7}'
}
for n in $PRODUCERS; do
  echo "producers=$n ..." >&2
  kingfisher_run "$n" | tee -a "$RESULTS" | sed 's/^/round=1 /' >>"$PAIRS"
  "$BIN/peers_bench" --system kingfisher --driver threads --endpoint "127.0.0.1:$KF_PORT" \
    --producers "$n" --messages "$MESSAGES" --payload-bytes "$PAYLOAD_BYTES" >>"$RESULTS"
  redis_run "$n" | tee -a "$RESULTS" | sed 's/^/round=1 /' >>"$PAIRS"
  "$BIN/peers_bench" --system etcd --endpoint "http://127.0.0.1:$ETCD_PORT" --producers "$n" \
    --messages "$MESSAGES" --payload-bytes "$PAYLOAD_BYTES" >>"$RESULTS"
  "$BIN/peers_bench" --system nats --endpoint "127.0.0.1:$NATS_PORT" --producers "$n" \
    --messages "$MESSAGES" --payload-bytes "$PAYLOAD_BYTES" >>"$RESULTS"
  for ((r = 2; r <= ROUNDS; r++)); do
    echo "producers=$n, kingfisher and redis, round $r of $ROUNDS ..." >&2
    kingfisher_run "$n" | sed "s/^/round=$r /" >>"$PAIRS"
    redis_run "$n" | sed "s/^/round=$r /" >>"$PAIRS"
  done
done

echo
echo "1 KiB appends acknowledged once durable; one in flight per producer; $MESSAGES per run"
echo "one run of each system (for Kingfisher against Redis, quote the medians below it)"
echo "nats: $NATS_NOTE"
awk '
  { sys=$1; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    key = sys SUBSEP v["producers"]; rate[key] = v["per_s"]; p50[key] = v["p50_ms"];
    p99[key] = v["p99_ms"]; if (!(v["producers"] in seen)) { seen[v["producers"]] = 1; order[++np] = v["producers"] } }
  END {
    printf "%-18s %9s %12s %9s %9s %10s\n", "system", "producers", "appends/s", "p50 ms", "p99 ms", "vs redis"
    ns = split("kingfisher kingfisher-threads redis etcd nats", systems, " ")
    for (j = 1; j <= np; j++) for (s = 1; s <= ns; s++) {
      key = systems[s] SUBSEP order[j]; r = rate[systems[s] SUBSEP order[j]]; base = rate["redis" SUBSEP order[j]]
      printf "%-18s %9s %12.0f %9.3f %9.3f %9.2fx\n", systems[s], order[j], r, p50[key], p99[key], (base > 0 ? r / base : 0)
    }
  }' "$RESULTS"

echo
echo "kingfisher against redis, alternating, per round (median last): appends/s ratio, p50 ratio, p99 ratio"
awk '
  { round=$1; sub(/round=/, "", round); sys=$2
    for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    n = v["producers"]; key = n SUBSEP round
    if (sys == "kingfisher") { kr[key] = v["per_s"]; k50[key] = v["p50_ms"]; k99[key] = v["p99_ms"] }
    else { rr[key] = v["per_s"]; r50[key] = v["p50_ms"]; r99[key] = v["p99_ms"] }
    if (!(n in seen)) { seen[n] = 1; order[++np] = n }
    if (round + 0 > rounds) rounds = round + 0 }
  function median(a, m,   i, j, t) {  # a[1..m], sorted in place
    for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
  function row(label, num, den, n,   r, m, a, out) {
    out = ""; m = 0
    for (r = 1; r <= rounds; r++) {
      if (den[n SUBSEP r] <= 0) continue
      a[++m] = num[n SUBSEP r] / den[n SUBSEP r]; out = out sprintf(" %6.2fx", a[m])
    }
    printf "%9s  %-10s%s   median %5.2fx\n", n, label, out, (m ? median(a, m) : 0) }
  function raw(label, v, n,   r, out) {  # the figures behind a ratio: which side moved
    out = ""; for (r = 1; r <= rounds; r++) out = out sprintf(" %7.0f", v[n SUBSEP r])
    printf "%9s  %-10s%s\n", "", label, out }
  END {
    for (j = 1; j <= np; j++) {
      row("appends/s", kr, rr, order[j]); raw("kingfisher", kr, order[j]); raw("redis", rr, order[j])
      row("p50", k50, r50, order[j]); row("p99", k99, r99, order[j])
    }
  }' "$PAIRS"

echo
echo "kingfisher's WAL flushes (a group's write + fdatasync, kf_wal_flush_duration_seconds), all rounds"
awk '{ n = $1; f[n] += $4 - $2; t[n] += $5 - $3; if (!(n in seen)) { seen[n] = 1; order[++np] = n } }
  END { for (j = 1; j <= np; j++) { n = order[j]; if (f[n] <= 0) continue
          printf "%9s producers: %.1f appends per flush, mean flush %.0f us\n", n, '"$MESSAGES"' * '"$ROUNDS"' / f[n], t[n] / f[n] * 1e6 } }' "$FLUSHES"
