#!/bin/sh
# run-agent-control.sh: only the target's own user (or root) may drive its
# agent; a refused peer gets a clear reason, and the target goes on unharmed.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root to run a client as another user"
command -v setpriv >/dev/null 2>&1 || skip "setpriv is not installed"
CTL=$top_builddir/tests/tools/agentctl
T=$TARGETS/agent_sites
# the build tree must be readable by the other user
setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" 2>/dev/null
[ $? -eq 2 ] || skip "user 65534 cannot run $CTL (build tree not readable)"

start_agent_target a capture=now,rate=1 "$T"
p=$target_pid
wait_ready a 1
# another user: refused with a reason
setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" "$p" status >o1 2>e1
[ $? -eq 1 ] || fail "a client of another user was not refused"
expect_grep "pid $p: .*permission denied: not the target's user" e1
setpriv --reuid=65534 --regid=65534 --clear-groups "$MEMWATCH" snap -p "$p" -o "${TMPDIR:-/tmp}/x-$$.snap" >out 2>err
st=$?
[ $st -eq 5 ] || fail "memwatch snap as another user: status $st, expected 5"
expect_err_line "pid $p: .*permission denied"
[ ! -e "${TMPDIR:-/tmp}/x-$$.snap" ] || { rm -f "${TMPDIR:-/tmp}/x-$$.snap"; fail "another user got a snapshot"; }
# root (the owner here) is served, and the capture was not disturbed
"$CTL" "$p" status >o2 2>e2 || fail "agentctl as root: $(cat e2)"
expect_grep '^status: capturing=1 hooks=[1-9]' o2
take_snap "$p" a.snap
expect_eq "keep_big live bytes" "$(site live_bytes a.snap "$T" keep_big)" 67108864
# a snap asking another rate joins the capture of the preloaded agent (no
# memwatch holds it), says so, and takes its snapshot at once
run_mw 0 snap -p "$p" -r 64KiB -o r.snap
expect_grep "^memwatch: warning: pid $p: sharing the capture of the preloaded agent at its sample rate 1 B, not 64.0 KiB$" err
step a
wait_ready a 2
step a
expect_target_exit "$p" a
finish
