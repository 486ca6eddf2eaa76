# tests/top-lib.sh: sourced after tests/lib.sh by tests/run-top-*.sh: memwatch
# top run in a tmux of the test's own (its socket in $tmp), driven with
# send-keys and read with capture-pane. Each session runs a shell script that
# clears the screen, says "SHELL BEFORE", runs memwatch top and writes its
# exit status to NAME.rc: once top has quit, the pane must be the shell's again.

command -v tmux >/dev/null 2>&1 || skip "tmux is not installed (apt-get install tmux)"
sock=$tmp/tmux.sock
# the server carries the test's id too: it must not outlive the test
cleanup_extra='tmux -S "$sock" kill-server 2>/dev/null'

# top_start NAME WIDTH HEIGHT ARGS...: memwatch top ARGS in session NAME of a
# WIDTH x HEIGHT terminal; its stderr in NAME.err, its exit status in NAME.rc,
# its own pid in NAME.pid.
top_start() {
	local name=$1 w=$2 h=$3 a q
	shift 3
	q=
	for a in "$@"; do
		q="$q '$a'"
	done
	rm -f "$name.rc" "$name.pid"
	cat >"$name.sh" <<SCRIPT
cd '$tmp'
# Ctrl-C goes to this shell too: it waits for top and goes on
trap 'echo' INT
clear
echo 'SHELL BEFORE $name'
sh -c 'echo \$\$ >$name.pid; exec "\$0" "\$@"' '$MEMWATCH' top$q 2>'$name.err'
echo \$? >'$name.rc'
echo 'SHELL AFTER $name'
exec sleep 600
SCRIPT
	tmux -f /dev/null -S "$sock" new-session -d -s "$name" -x "$w" -y "$h" "sh '$tmp/$name.sh'" ||
		fail "tmux new-session $name"
}

# pane NAME: the screen of session NAME into NAME.pane.
pane() {
	tmux -S "$sock" capture-pane -p -t "$1" >"$1.pane" 2>/dev/null
}

# keys NAME KEY...: type into session NAME.
keys() {
	local name=$1
	shift
	tmux -S "$sock" send-keys -t "$name" "$@" || fail "tmux send-keys $*"
}

# see NAME ERE [SECS]: wait until the screen of NAME has a line matching ERE;
# fails (showing the screen) when it does not within SECS (default 30).
see() {
	if ! wait_until "pane $1; grep -Eq -- '$2' $1.pane" "${3:-30}"; then
		sed 's/^/  screen: /' "$1.pane" >&2
		return 1
	fi
	return 0
}

# top_row NAME ERE [SECS]: the first row under the column heads matches ERE
# within SECS (times the limits' scale: the ASan build's view is slower).
top_row() {
	if ! wait_until "pane $1; grep -A1 -E '^ +GROWTH ' $1.pane | tail -n 1 | grep -Eq -- '$2'" \
		"$(( ${3:-30} * ${MEMWATCH_TEST_LIMIT_SCALE:-1} ))"; then
		sed 's/^/  screen: /' "$1.pane" >&2
		return 1
	fi
	return 0
}

# top_quit NAME STATUS: memwatch top has exited with STATUS, and the screen is
# the shell's again: what it showed before top, nothing of top's view, in the
# screen and its scrollback.
top_quit() {
	wait_until "[ -s $1.rc ]" 30 || { pane "$1"; sed 's/^/  screen: /' "$1.pane" >&2; return 0; }
	[ "$(cat "$1.rc")" = "$2" ] || { fail "$1: memwatch top exited $(cat "$1.rc"), expected $2"; sed 's/^/  stderr: /' "$1.err" >&2; }
	see "$1" "^SHELL AFTER $1" 10
	# the screen with what scrolled off it (the report top prints as it ends
	# can be longer than the screen)
	tmux -S "$sock" capture-pane -p -S - -t "$1" >"$1.all" 2>/dev/null
	expect_grep "^SHELL BEFORE $1\$" "$1.all"
	expect_no_grep "^memwatch top  pid|Up/Down move|GROWTH .* LIVE" "$1.all"
}
