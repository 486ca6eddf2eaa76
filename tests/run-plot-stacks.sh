#!/bin/sh
# run-plot-stacks.sh: memwatch plot draws, below the memory, the live heap of
# the top stacks at each snapshot of a run: two leaks that take turns are two
# lines, each rising in its own period; memwatch report has the same plot.
. "$top_srcdir/tests/lib.sh"

# the run: snapshots every 200 ms while the test steps the target, and each
# step waits for a snapshot taken after it
mkfifo turns.in || fail "mkfifo"
"$MEMWATCH" run -q --capture now -i 100ms --snap-every 200ms --max-snaps 100 -r 64KiB \
	-o turns.log -- "$TARGETS/plot_turns" < turns.in > turns.out 2> turns.err &
mw_pid=$!
started_pids="$started_pids $mw_pid"
exec 3> turns.in
snaps() { grep -c '^# event [0-9.]* [0-9]* snapshot ' turns.log 2>/dev/null; }
wait_ready turns 0
wait_until '[ "$(snaps)" -ge 1 ]' 30
for i in 1 2 3 4 5 6 7 8; do
	echo go >&3
	wait_ready turns $i || break
	n=$(snaps)
	wait_until "[ \"\$(snaps)\" -gt $n ]" 30 || break
done
exec 3>&-
wait "$mw_pid"
status=$?
[ "$status" -eq 0 ] || { fail "memwatch run exited $status"; sed 's/^/  | /' turns.err >&2; }
expect_grep '^ok$' turns.out

# the program gnuplot receives: both leaks among the stacks, by their head
run_mw 0 plot --script turns.log
[ -s err ] && { fail "plot --script: messages on stderr"; cat err >&2; }
expect_grep "^mw_nstacks = [2-8]\$" out
expect_grep "^mw_stack_title\[[0-9]\] = 'leak_alpha'" out
expect_grep "^mw_stack_title\[[0-9]\] = 'leak_beta'" out
expect_grep "^mw_height = 1100\$" out
cp out turns.gp

# each line's points (time, KiB) in its block of $mw_stacks
block() {
	awk -v name="$1" '/^\$mw_stacks << EOD/ { on = 1; next } on && /^EOD/ { exit }
		on && /^# stack / { cur = ($0 ~ ": " name "$") } on && cur && NF == 2 { print }' turns.gp
}
block leak_alpha > alpha.pts
block leak_beta > beta.pts
[ "$(grep -c '' alpha.pts)" -ge 9 ] || fail "leak_alpha has $(grep -c '' alpha.pts) points, expected one per snapshot (9 or more)"
# alpha rises to 16 MiB while beta stays at 0; then alpha stays and beta rises
# to 16 MiB: where alpha reaches its top, beta has not started, and from there
# on alpha does not move while beta does
paste alpha.pts beta.pts | awk '
	{ t[NR] = $1; a[NR] = $2; b[NR] = $4; if ($1 != $3) bad = "times differ at " NR }
	END {
		if (bad) { print bad; exit 1 }
		for (i = 1; i <= NR && a[i] < 16000; i++) if (b[i] != 0) { print "beta " b[i] " KiB at " t[i] " while alpha rises"; exit 1 }
		if (i > NR) { print "alpha never reaches 16 MiB"; exit 1 }
		top = i; rose = 0
		for (i = 2; i <= top; i++) if (a[i] > a[i - 1]) rose++
		if (rose < 2) { print "alpha rose in " rose " steps, expected several"; exit 1 }
		brose = 0
		for (i = top + 1; i <= NR; i++) {
			if (a[i] != a[top]) { print "alpha moves at " t[i] " after its top"; exit 1 }
			if (b[i] > b[i - 1]) brose++
		}
		if (brose < 2 || b[NR] < 16000) { print "beta rose in " brose " steps to " b[NR] " KiB, expected several, to 16 MiB"; exit 1 }
	}' > shape.out || fail "the lines do not take turns: $(cat shape.out)"

command -v gnuplot >/dev/null 2>&1 || { echo "gnuplot is not installed: the images are not drawn" >&2; finish; }
# the image: taller by the panel, unless --size is given
run_mw 0 plot -o turns.png turns.log
size=$(od -An -tu1 -j16 -N8 turns.png | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4, $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }')
[ "$size" = "1200 1100" ] || fail "turns.png: expected 1200x1100, found '$size'"
[ -s err ] && { fail "plot: messages on stderr"; cat err >&2; }
run_mw 0 plot -s 900x600 -o small.svg turns.log
expect_grep 'leak_beta' small.svg
# --stacks 0: the plot as without snapshots
run_mw 0 plot --stacks 0 --script turns.log
expect_grep '^mw_nstacks = 0$' out
expect_grep '^mw_height = 700$' out
run_mw 0 plot --stacks 1 --script turns.log
expect_grep '^mw_nstacks = 1$' out
run_mw 2 plot --stacks x turns.log
expect_err_line "plot: invalid --stacks 'x'"

# the snapshots left behind: the plot as without them, silently, unless asked
# (memwatch runs in the log's directory then: a snapshot's name is relative
# to where the watch ran)
mkdir alone && cp turns.log alone/ && cd alone || exit 99
run_mw 0 plot --script turns.log
expect_grep '^mw_nstacks = 0$' out
[ -s err ] && { fail "a log without its snapshots: messages on stderr"; cat err >&2; }
run_mw 0 plot --stacks 4 --script turns.log
expect_grep '^mw_nstacks = 0$' out
expect_grep 'plot: [0-9]+ snapshots named in .turns.log. not found' err
cd .. || exit 99

# the HTML report holds the same plot
run_mw 0 report -o turns.html turns.log
expect_grep 'and its top stacks over time" width="1200" height="900"' turns.html
finish
