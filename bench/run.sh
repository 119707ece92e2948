#!/usr/bin/env bash
# Runs the benchmark binaries of a build dir and prints their figures.
# Usage: bench/run.sh [BUILD_DIR]   (default: build)
set -euo pipefail
BUILD_DIR="${1:-build}"
BIN="$BUILD_DIR/bin"

run() {
  local name="$1"; shift
  if [[ -x "$BIN/$name" ]]; then
    echo "== $name"
    "$BIN/$name" "$@"
  else
    echo "== $name: not built (cmake --build $BUILD_DIR --target $name)" >&2
  fi
}

run local_wal_bench --dir "$BUILD_DIR"
# Starts $BIN/kingfisher on loopback with a temp data dir in the build dir.
run tailing_bench --dir "$BUILD_DIR"
run tailing_bench --dir "$BUILD_DIR" --consumers 16
# Issue 27: sixteen consumers at half of the rate they keep up with.
run tailing_bench --dir "$BUILD_DIR" --consumers 16 --phase 2 --half-peak
# Starts a real etcd (Debian's binary) on loopback with its data in the build dir.
run meta_store_bench --dir "$BUILD_DIR"
# Issue 6: object PUT/GET on the local store and on a real Ceph RGW (started on loopback).
run object_store_bench --dir "$BUILD_DIR"
# Issue 6: the objectstore WAL backend on the local store and on a real Ceph RGW.
run objectstore_wal_bench --dir "$BUILD_DIR"
# Issue 6 part 3: quorum ack latency over 3 logstore processes vs a raw fdatasync.
run quorum_bench --dir "$BUILD_DIR"
# Issue 4: in-process fast path vs etcd + coord + 3 nodes over gRPC, then 10 kill -9 failovers
# (lease TTL 2 s); everything under the build dir.
run cluster_bench --dir "$BUILD_DIR"
# Issue 5: create-collection latency (16 shards) and DDL throughput through the coordinator.
run ddl_bench --dir "$BUILD_DIR"
# Issue 28: search through the client vs the index library in-process; freshness under load.
run search_bench --dir "$BUILD_DIR"
# Recovery storage: restart time after kill -9 with checkpoints vs a whole-log replay, 1x and
# 10x the history; a segment flush vs a raw PUT.
run recovery_bench --dir "$BUILD_DIR"
# Issue 30: replication east -> west between two standalone servers: the secondary's apply rate
# next to its own append rate; the lag at 5000 msgs/s next to the primary's ack latency.
run replication_bench --dir "$BUILD_DIR"
