#!/bin/sh
# install-deps.sh: install the Debian packages memwatch needs to build and test.
# Run as root, or as a user who may use sudo. Safe to run again.
set -e
packages="build-essential autoconf automake libtool pkg-config
	libproc2-dev libunwind-dev libdw-dev libelf-dev libdebuginfod-dev zlib1g-dev
	libcmocka-dev gnuplot-nox debuginfod libc6-dbg file procps
	clang libclang-rt-14-dev valgrind g++ libjemalloc2 libtcmalloc-minimal4
	curl python3 libpython3-dev python3.11-dbg heaptrack time libprotobuf-c-dev protobuf-c-compiler golang-go
	nodejs prometheus prometheus-node-exporter chromium strace
	redis-server redis-tools sqlite3"
missing=
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	# root installs directly; anyone else through sudo, when there is one
	if [ "$(id -u)" -eq 0 ]; then
		sudo=
	elif command -v sudo > /dev/null; then
		sudo="sudo"
	else
		echo "install-deps: missing packages:$missing (run as root)" >&2
		exit 1
	fi
	# libunwind-dev conflicts with LLVM's libunwind-14-dev; -y lets apt resolve it.
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
fi
