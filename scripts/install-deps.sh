#!/usr/bin/env bash
# Installs the Debian packages hearth's build, run and tests need, only those missing.
# Run as root on Debian 12 (make runs it; `make deps` runs it alone).
# Exit 0 when everything is present, non-zero with a clear message otherwise.
set -euo pipefail

# Build: compilers, BPF tool chain, libraries hearth links against.
BUILD_PKGS=(make gcc clang llvm bpftool libbpf-dev libelf-dev libdw-dev libdebuginfod-dev
	zlib1g-dev libdeflate-dev libprotobuf-c-dev protobuf-c-compiler libsqlite3-dev libmicrohttpd-dev
	libcurl4-openssl-dev libiberty-dev libyaml-dev libjson-c-dev pkg-config)
# Tests and benchmarks: real clients and peers (go tool pprof, chromium, perf),
# sanitizer and fuzzer runtimes, workload tool chains; dpkg-buildpackage and
# debhelper for the package test, systemd-analyze for the units, man for man pages;
# OpenJDK 17 (java, javac, jcmd, jfr) for the Java walk's test (docs/java.md).
TEST_PKGS=(golang-go chromium linux-perf libclang-rt-14-dev g++ procps psmisc time util-linux
	debuginfod elfutils binutils curl openssl python3 libxml2-utils jq pngquant sqlite3 bpftrace gzip ruby
	debhelper dpkg-dev fakeroot systemd man-db protobuf-compiler clickhouse-server
	clickhouse-client zookeeper austin openjdk-17-jdk-headless)
# Node.js and npm may come from another source (with npm bundled, where Debian's
# npm package would conflict): install Debian's only when the commands are missing.
NODE_PKGS=(nodejs npm)

want=("${BUILD_PKGS[@]}")
if [ "${1:-}" = "--test" ]; then
	want+=("${TEST_PKGS[@]}")
	if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
		want+=("${NODE_PKGS[@]}")
	fi
fi

missing=()
for p in "${want[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing Debian packages: ${missing[*]}; run as root (or install them) and retry" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
