# tests/node-lib.sh: sourced after tests/lib.sh by tests/run-node-*.sh: a node
# running tests/targets/js_grow.js. Each test runs on the nodejs package's
# /usr/bin/node (node 20, V8 11.3); its run-node18-*.sh twin sets
# node_under_test=18 and runs it on Debian's node 18 (V8 10.2), which
# tests/install-deps.sh --tests unpacks into $NODE18_DIR.

JS=${top_srcdir:?}/tests/targets/js_grow.js
CTL=${top_builddir:?}/tests/tools/agentctl
NODE18_DIR=/opt/memwatch-tests/node18
# the lines of retainObjects and growBuffers (V8 names a function by where it starts)
retain_line=$(grep -n '^function retainObjects' "$JS" | cut -d: -f1)
buffer_line=$(grep -n '^function growBuffers' "$JS" | cut -d: -f1)

# need_node: the node under test, ${node_under_test:-20}, as $NODE (a program
# to run as node is run), its V8 version in $V8_VERSION; skips when it is not
# there or its V8 is not the one expected.
need_node() {
	local want
	case ${node_under_test:-20} in
	18)
		# its binary itself, not the launcher (a shell that would exec
		# it under memwatch run), with its libnode found through the
		# environment every program of the test inherits
		NODE=$NODE18_DIR/usr/bin/node
		want=10.2.
		[ -x "$NODE18_DIR/node" ] && [ -x "$NODE" ] ||
			skip "Debian's node 18 is not unpacked in $NODE18_DIR (sh tests/install-deps.sh --tests)"
		LD_LIBRARY_PATH=$(dirname "$(find "$NODE18_DIR/usr/lib" -name 'libnode.so.108' | head -n 1)")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		export LD_LIBRARY_PATH
		;;
	*)
		NODE=/usr/bin/node
		want=11.3.
		[ -x "$NODE" ] || skip "$NODE is not installed (package nodejs)"
		;;
	esac
	V8_VERSION=$("$NODE" -p process.versions.v8 2>/dev/null) ||
		skip "$NODE does not run: $("$NODE" -e 0 2>&1 | head -n 1)"
	case $V8_VERSION in
	"$want"*) ;;
	*) skip "$NODE's V8 is $V8_VERSION, not the $want expected here" ;;
	esac
	echo "node under test: $NODE, V8 $V8_VERSION"
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
