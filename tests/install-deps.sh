#!/bin/sh
# install-deps.sh: install the Debian packages memwatch needs.
#   sh tests/install-deps.sh          what building memwatch and running it (and
#                                     its demo) needs
#   sh tests/install-deps.sh --tests  that, and what only the test suite needs:
#                                     the programs nobody here wrote that the tests
#                                     point memwatch at, the peers the benchmarks
#                                     compare with, the fuzzers' compiler
# Run as root, or as a user who may use sudo. Safe to run again: only missing
# packages are installed, and nothing is asked for when none is missing.
set -e

# Building: the toolchain and autotools, the libraries memwatch links
# (libproc2, libunwind, elfutils, protobuf-c, ncurses for memwatch top) and
# the headers it reads (libdebuginfod's). cmocka is here although only the
# unit tests use it: configure looks for it when it runs, so it must be there
# before the build.
# Running: gnuplot draws the plots.
build="build-essential autoconf automake libtool pkg-config
	libproc2-dev libunwind-dev libdw-dev libelf-dev libdebuginfod-dev zlib1g-dev
	libprotobuf-c-dev protobuf-c-compiler libncurses-dev libcmocka-dev
	gnuplot-nox"

# The tests: debug info for libc, a debuginfod server, the fuzzers' clang,
# valgrind, the allocators and runtimes the agent is tested in (jemalloc,
# tcmalloc, CPython and its debug build, node, a JVM, Go, musl), the servers and
# tools nobody here wrote (redis, sqlite3, Prometheus and its node exporter,
# chromium for the HTML report), heaptrack to compare with, tmux to drive
# memwatch top, ss (iproute2) to check node opens no port.
tests="libc6-dbg debuginfod file clang libclang-rt-14-dev valgrind g++
	libjemalloc2 libtcmalloc-minimal4 curl python3 libpython3-dev python3.11-dbg
	heaptrack time golang-go musl-tools nodejs openjdk-17-jdk-headless
	prometheus prometheus-node-exporter chromium strace
	redis-server redis-tools sqlite3 procps tmux iproute2"

case "${1:-}" in
"") packages=$build ;;
--tests) packages="$build $tests" ;;
*)
	echo "usage: sh tests/install-deps.sh [--tests]" >&2
	exit 2
	;;
esac

missing=
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -n "$missing" ] || exit 0

# root installs directly; anyone else through sudo, when there is one
if [ "$(id -u)" -eq 0 ]; then
	sudo=
elif command -v sudo > /dev/null; then
	sudo="sudo"
else
	echo "install-deps: missing packages:$missing (run as root, or install sudo)" >&2
	exit 1
fi
echo "install-deps: installing$missing"
# libunwind-dev conflicts with LLVM's libunwind-14-dev; -y lets apt resolve it.
# The lock timeout lets it wait for another apt (an unattended upgrade) to end.
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	-o DPkg::Lock::Timeout=600 $missing
