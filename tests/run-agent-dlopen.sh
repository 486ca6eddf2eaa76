#!/bin/sh
# run-agent-dlopen.sh: libraries loaded after the agent started are hooked: by
# dlopen (a slash-less name still found along the *caller's* RUNPATH, not the
# agent's), by dlmopen, which bypasses every GOT and is caught by the control
# thread watching the loader's counters, and again after a dlclose and a new
# dlopen of the same library. Their allocations are exact at rate 1.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/agent-lib.sh"

T=$TARGETS/agent_dlopen
LIB=$TARGETS/.libs/libagent_late.so
CTL=$top_builddir/tests/tools/agentctl
[ -f "$LIB" ] || skip "$LIB is not built"

hooks_of() {
	"$CTL" "$1" status 2>/dev/null | sed -n 's/^status: .* hooks=\([0-9]*\) .*/\1/p'
}

for mode in rpath path dlmopen reload; do
	start_agent_target $mode capture=now,rate=1 "$T" $mode "$LIB"
	p=$target_pid
	wait_ready $mode 0
	if [ $mode = dlmopen ] || [ $mode = reload ]; then
		# nothing saw this load: the control thread must find it by itself
		wait_until "[ \"\$(hooks_of $p)\" = '$hooks' ]" 10
	else
		hooks=$(hooks_of "$p")
	fi
	step $mode
	wait_ready $mode 1
	take_snap "$p" $mode.snap
	expect_eq "late_keep live bytes ($mode)" "$(site live_bytes $mode.snap "$LIB" late_keep)" 300000
	expect_eq "late_keep live blocks ($mode)" "$(site live_blocks $mode.snap "$LIB" late_keep)" 10
	expect_grep "^module [0-9]+ .*build_id=[0-9a-f]+ path=\".*libagent_late.so\"" $mode.snap.txt
	step $mode
	expect_target_exit "$p" $mode
done
[ "${hooks:-0}" -gt 0 ] || fail "no hooks counted"

# Without the agent the RUNPATH load works the same (the test is fair).
"$T" rpath </dev/null >plain.out 2>&1
expect_grep '^ready 0' plain.out
finish
