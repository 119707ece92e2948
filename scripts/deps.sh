#!/usr/bin/env bash
# Installs exactly the Debian packages Kingfisher builds and tests with, and only when one is
# missing (so a warm machine pays nothing). Run as root (CI and dev machines are root).
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config clang-14 libclang-rt-14-dev clang-format openssl
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libcurl4-openssl-dev libssl-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libfaiss-dev libopenblas0-serial libomp-14-dev libcpp-httplib-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev nodejs npm
  libgoogle-perftools-dev python3 etcd-server etcd-client golang-etcd-server-dev
  ceph-mon ceph-osd radosgw ceph-common
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm may come from outside Debian on some images; a working npm binary is what we need.
if [[ " ${missing[*]-} " == *" npm "* ]] && command -v npm >/dev/null; then
  missing=("${missing[@]/npm/}")
fi
missing=($(printf '%s\n' "${missing[@]-}" | sed '/^$/d'))
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "deps: all Debian packages present"
fi
