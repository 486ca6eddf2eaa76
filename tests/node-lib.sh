# tests/node-lib.sh: sourced after tests/lib.sh by tests/run-node-*.sh: node
# (the nodejs package's /usr/bin/node) running tests/targets/js_grow.js.

JS=${top_srcdir:?}/tests/targets/js_grow.js
CTL=${top_builddir:?}/tests/tools/agentctl
# the lines of retainObjects and growBuffers (V8 names a function by where it starts)
retain_line=$(grep -n '^function retainObjects' "$JS" | cut -d: -f1)
buffer_line=$(grep -n '^function growBuffers' "$JS" | cut -d: -f1)

# need_node: /usr/bin/node, a node 20 (V8 11.3, the version the agent reads), as $NODE.
need_node() {
	NODE=/usr/bin/node
	[ -x "$NODE" ] || skip "$NODE is not installed (package nodejs)"
	"$NODE" -e 'process.exit(process.versions.v8.startsWith("11.3.") ? 0 : 1)' ||
		skip "$NODE's V8 is not 11.3, the version the agent reads"
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
