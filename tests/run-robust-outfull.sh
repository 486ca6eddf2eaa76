#!/bin/sh
# run-robust-outfull.sh: every command's output file hits the file size limit
# (ulimit -f; memwatch ignores SIGXFSZ, so write fails with EFBIG): memwatch
# snap -o (new, and -f over an existing file), show -o, show -E, diff -o and
# plot -o. Each says so in one line, exits 1, leaves no file and no temporary
# file behind, and an existing file as it was.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"

# limited LIMIT EXPECTED ARGS...: run_mw under ulimit -f LIMIT (blocks of 512
# or 1024 bytes, as the shell counts them).
limited() {
	local lim=$1 expected=$2
	shift 2
	(ulimit -f "$lim" && exec "$MEMWATCH" "$@" >out 2>err)
	status=$?
	[ "$status" -eq "$expected" ] || { fail "memwatch $* under ulimit -f $lim: status $status, expected $expected"; sed 's/^/  stderr: /' err >&2; }
}

# an agent holding 4000 stacks: a snapshot of some 400 KB
: >stacks.out
"$MEMWATCH" run -r 1 -i 100ms -q -o s.log -- "$robust" stacks 4000 60 >stacks.out 2>run.err &
mw=$!
started_pids="$started_pids $mw"
wait_until "grep -q '^ready' stacks.out" 20
pid=$(sed -n 's/^# process: \([0-9]*\) .*/\1/p' s.log)
[ -n "$pid" ] && started_pids="$started_pids $pid"

limited 20 1 snap --wait 0 -p "$pid" -o big.snap
expect_err_line "cannot write 'big\.snap': File too large$"
[ -e big.snap ] && fail "snap left a partial big.snap"
echo 'an earlier file' >kept
limited 20 1 snap --wait 0 -p "$pid" -f -o kept
expect_err_line "cannot write 'kept': File too large$"
[ "$(cat kept)" = 'an earlier file' ] || fail "snap -f changed kept though it failed"

run_mw 0 snap --wait 0 -p "$pid" -o full.snap
snaps_complete "snap without a limit" full.snap
limited 4 1 show -n 0 -o kept full.snap
expect_err_line "cannot write 'kept': File too large$"
[ "$(cat kept)" = 'an earlier file' ] || fail "show -o changed kept though it failed"
limited 4 1 show -E emb.snap full.snap
expect_err_line "cannot write 'emb\.snap': File too large$"
[ -e emb.snap ] && fail "show -E left a partial emb.snap"
# the same process with no stack yet: every stack of full.snap is new
"$snapdump" full.snap | grep -v '^stack ' | grep -v '^  ' >none.txt
"$snapdump" --from-text none.txt none.snap || fail "snapdump --from-text none.txt"
limited 4 1 diff -n 0 -F json -o kept none.snap full.snap
expect_err_line "cannot write 'kept': File too large$"
[ "$(cat kept)" = 'an earlier file' ] || fail "diff -o changed kept though it failed"
if command -v gnuplot >/dev/null 2>&1; then
	limited 4 1 plot -o p.png s.log
	expect_err_line "'p\.png'.*File too large"
	[ -e p.png ] && fail "plot left a partial p.png"
fi
kill -0 "$pid" || fail "the target died"
no_temp_files "outfull"
finish
