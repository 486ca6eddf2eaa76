#!/bin/sh
# run-python-gunicorn.sh: a real server's leak named after the view that
# keeps the memory, not after the code whose dropped objects CPython recycled
# into it. Debian's gunicorn serves tests/targets/gunicorn_keep/keepapp.py
# with 2 sync workers on 127.0.0.1; its view, remember, keeps small dicts and
# pairs for every request, the kinds of objects that gunicorn's own
# temporaries of the same request (its logging, its Date header) leave on
# the interpreter's free lists. A bounded client (127.0.0.1 only, at most
# 60000 requests or 150 s) makes requests while memwatch -p MASTER --children
# watches the tree at the default rate, until both workers have grown by 16 MiB
# past their trigger (however slow the machine), then is stopped by SIGTERM.
# In every worker's report the top row
# is remember. In the diff of each worker's first and last snapshots (the
# report's own table when it has two; with three or more the report is the
# trend, which has no sample counts), no row with evidence (one whose
# samples are not marked ?) names other code than the application's (without
# the free lists kept empty, rows of Logger.debug, Response.process_headers or
# format_datetime held several samples and MiB), and such rows hold 3 samples
# at most in all (sampling noise, and the few objects gunicorn itself keeps).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
need_py311
command -v gunicorn >/dev/null 2>&1 || skip "gunicorn is not installed (sh tests/install-deps.sh --tests)"

gunicorn -w 2 -k sync -b 127.0.0.1:0 --chdir "$top_srcdir/tests/targets/gunicorn_keep" \
	keepapp:app >g.out 2>g.err &
g=$!
started_pids="$started_pids $g"
wait_until "grep -q 'Listening at: http://127.0.0.1:' g.err && [ \$(grep -c 'Booting worker' g.err) -ge 2 ]" 30 ||
	{ sed 's/^/  | /' g.err >&2; finish; }
port=$(sed -n 's|.*Listening at: http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' g.err)
"$py" "$top_srcdir/tests/targets/gunicorn_client.py" "$port" 60000 150 "$PWD/stop" >c.out 2>c.err &
c=$!
started_pids="$started_pids $c"

# workers_grown: $n, how many of the master's workers grew by 16 MiB or more
# since their trigger, by g.log's samples
workers_grown() {
	local w
	n=0
	for w in $(ps -o pid= --ppid "$g"); do
		awk -v w="$w" -v need=$((16 << 20)) '
			$1 == "#" && $2 == "event" && $4 == w && $5 == "trigger" {
				for (i = 6; i <= NF; i++) if ($i ~ /^rss=/) trig = substr($i, 5) + 0 }
			$1 ~ /^[0-9.]+$/ && $2 == w { last = $3 * 1024 }
			END { exit !(trig > 0 && last - trig >= need) }' g.log 2>/dev/null && n=$((n + 1))
	done
}
"$MEMWATCH" -p "$g" --children -i 200ms -d 150s -q --trigger +3MiB -o g.log >g.report 2>mw.err &
m=$!
started_pids="$started_pids $m"
wait_until "workers_grown; [ \$n -ge 2 ]" 120
kill -TERM "$m"
wait "$m"
st=$?
[ "$st" -eq 143 ] || { fail "memwatch: exit status $st, expected 143 (SIGTERM)"; sed 's/^/  | /' mw.err >&2; }
touch stop
wait "$c" || { fail "the client exited with status $?"; sed 's/^/  | /' c.err >&2; }
cat c.out
kill "$g"
wait "$g"
expect_no_grep 'Traceback|Segmentation|Fatal Python error' g.err

# rows FILE: the rows of the report sections of FILE, "PID RANK WHERE" a line
rows() {
	awk '/^memwatch: pid [0-9]+:/ { pid = $3; sub(/:$/, "", pid) }
	     /^ +[0-9]+ +[-+][0-9.]+ [KMG]?i?B / && pid != "" {
		line = $0
		sub(/.* (new|grown|shrunk|gone|same) +/, "", line)
		printf "%s %d %s\n", pid, $1, line }' "$1"
}
rows g.report >top.txt
sed 's/^/  /' top.txt
workers=$(awk '{ print $1 }' top.txt | sort -u)
[ "$(echo "$workers" | grep -c .)" -ge 1 ] || { fail "no worker's growth in the report"; sed 's/^/  | /' g.report >&2; }
# diff W: the diff of worker W's first and last snapshots, after a line
# "memwatch: pid W:", appended to diffs.txt
: >diffs.txt
for w in $workers; do
	snaps=$(sed -n "s/^# event [0-9.]* $w snapshot path=\([^ ]*\) .*/\1/p" g.log)
	set -- $snaps
	[ $# -ge 2 ] || { fail "worker $w: fewer than 2 snapshots in g.log"; continue; }
	first=$1
	shift $(($# - 1))
	run_mw 0 diff "$first" "$1"
	{ echo "memwatch: pid $w:"; cat out; } >>diffs.txt
done
# per worker, the rows of its diff: "PID RANK BYTES SAMPLES WHERE"
awk '/^memwatch: pid [0-9]+:/ { pid = $3; sub(/:$/, "", pid) }
     /^ +[0-9]+ +[-+][0-9.]+ [KMG]?i?B / && pid != "" {
	m = 1
	if ($3 == "KiB") m = 1024
	if ($3 == "MiB") m = 1048576
	if ($3 == "GiB") m = 1073741824
	line = $0
	sub(/.* (new|grown|shrunk|gone|same) +/, "", line)
	printf "%s %d %.0f %s %s\n", pid, $1, $2 * m, $11, line }' diffs.txt >rows.txt
sed 's/^/  /' rows.txt
for w in $workers; do
	awk -v w="$w" '$1 == w && $2 == 1' top.txt | grep -q ' remember  keepapp\.py:' ||
		fail "worker $w: the report's top row is not remember"
	awk -v w="$w" '$1 == w && $2 == 1' rows.txt | grep -q ' remember  keepapp\.py:' ||
		fail "worker $w: the diff's top row is not remember"
	# the rest: no row with evidence, and a few samples at most in all
	awk -v w="$w" '$1 == w && !/ keepapp\.py:/ { n = $4; sub(/\?$/, "", n); samples += n
			if ($4 !~ /\?$/) bad = bad " " $5 }
		END { printf "%d %s\n", samples, bad }' rows.txt >w.txt
	read -r samples bad <w.txt
	[ -z "$bad" ] || fail "worker $w: a row with evidence names other code than the application's:$bad"
	[ "$samples" -le 3 ] ||
		fail "worker $w: rows of other code than the application's hold $samples samples"
done
finish
