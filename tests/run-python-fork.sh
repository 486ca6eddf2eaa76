#!/bin/sh
# run-python-fork.sh: memwatch run --children on CPython programs that fork
# their workers: a multiprocessing.Pool and Debian's gunicorn with 2 sync
# workers. Each worker is captured with its Python frames (the leaking
# function is the top row of its report, with file and line); a worker's
# parent that did not capture (--capture growth) does not keep its worker from
# capturing; the master's trigger baseline is its RSS once started, not at
# exec; a program started without the preload (its environment cleared) is
# said so in one line and attached to.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
# start_mw and wait_mw
. "$top_srcdir/tests/shared-lib.sh"

need_py311
POOL=$top_srcdir/tests/targets/py_pool.py
leak_line=$(grep -n 'kept.append(bytes(' "$POOL" | cut -d: -f1)

# top_row LOG OUT PID: the first row of PID's report in OUT, in $row.
top_row() {
	row=$(awk -v p="memwatch: pid $3: " 'index($0, p) == 1 { on = 1; next }
		/^memwatch: pid / { on = 0 } on && /^ +1 / { print; exit }' "$2")
}

# snaps_of LOG PID: how many snapshots of PID the log names, in $n.
snaps_of() {
	n=$(grep -c "^# event [0-9.]* $2 snapshot path=" "$1")
}

# workers_snapped LOG [K]: $n, how many processes other than the first the log
# names have K snapshots or more (1).
workers_snapped() {
	local root
	root=$(sed -n 's/^# process: \([0-9]*\) .*/\1/p' "$1" 2>/dev/null | head -n 1)
	n=$(sed -n 's/^# event [0-9.]* \([0-9]*\) snapshot path=.*/\1/p' "$1" 2>/dev/null |
		grep -v "^$root\$" | sort | uniq -c | awk -v k="${2:-1}" '$1 >= k' | grep -c '')
}

# pool NAME PREFIX...: the pool under memwatch run --children (PREFIX runs
# the script), until each worker has a snapshot; then each worker's top row
# must be crunch at its line.
pool() {
	local name=$1 log w
	shift
	log=$name.log
	start_mw "$name" run --children -i 200ms -o "$log" -- "$@" "$py" "$POOL" "$name.go"
	wait_until "workers_snapped '$log'; [ \$n -ge 2 ] || grep -qs '^workers' '$name.out'" 90
	: >"$name.go"
	wait_mw "$name" "$mw_pid" 0
	set -- $(sed -n 's/^workers //p' "$name.out")
	[ $# -eq 2 ] || fail "$name: expected 2 workers, the script says: $(cat "$name.out" | head -n 3)"
	for w in "$@"; do
		top_row "$log" "$name.out" "$w"
		case $row in
		*" crunch  py_pool.py:$leak_line"*) ;;
		*) fail "$name: worker $w's top row is not crunch py_pool.py:$leak_line: '$row'"
		   sed 's/^/  out: /' "$name.out" >&2 ;;
		esac
	done
}

# 1. a Pool forked from the preloaded interpreter
pool a

# 2. started without the preload: the interpreter is attached to, and its
# workers are forks of an injected agent; one line for each says why
pool b env -u LD_PRELOAD
expect_grep "^memwatch: warning: pid [0-9]*: it was started without the agent's LD_PRELOAD .*; attaching to it as memwatch -p does$" b.err
expect_no_grep "set-uid" b.err

# 3. gunicorn, 2 sync workers, a bounded client on 127.0.0.1
GUNICORN=/usr/bin/gunicorn
[ -x "$GUNICORN" ] || skip "$GUNICORN is not installed (sh tests/install-deps.sh --tests)"
port_of() {
	port=$(sed -n 's|.*Listening at: http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$1" | head -n 1)
}
# client PORT N: N requests, each bounded, in at most 60 s
client() {
	timeout 60 "$py" -c 'import sys, urllib.request
for i in range(int(sys.argv[2])):
    urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=10).read()' "$1" "$2"
}

# gunicorn NAME OPTIONS...: gunicorn under memwatch run --children OPTIONS,
# served requests until each worker has 2 snapshots; then stopped with
# SIGTERM, passed on by memwatch.
gunicorn() {
	local name=$1
	shift
	start_mw "$name" run --children -i 200ms -o "$name.log" "$@" -- \
		"$GUNICORN" -w 2 -b 127.0.0.1:0 --chdir "$top_srcdir/tests/targets" py_wsgi:app
	wait_until "grep -q 'Booting worker' '$name.err' && [ \$(grep -c 'Booting worker' '$name.err') -ge 2 ]" 60
	port_of "$name.err"
	[ -n "$port" ] || fail "$name: gunicorn's port not found"
	# requests in rounds until each worker has 2 snapshots (the requests
	# go to either), for at most 60 s
	end=$(($(date +%s) + 60))
	while workers_snapped "$name.log" 2; [ "$n" -lt 2 ] && [ "$(date +%s)" -lt "$end" ]; do
		client "$port" 100 || { fail "$name: the client failed"; break; }
	done
	[ "$n" -ge 2 ] || fail "$name: the workers do not have 2 snapshots each"
	master=$(sed -n 's/^# process: \([0-9]*\) .*/\1/p' "$name.log" | head -n 1)
	workers=$(sed -n "s/^# event [0-9.]* \([0-9]*\) process ppid=$master .*/\1/p" "$name.log")
	kill -TERM "$mw_pid"
	wait_mw "$name" "$mw_pid" 0
	set -- $workers
	[ $# -eq 2 ] || fail "$name: expected 2 workers in the log, got '$workers'"
	for w in "$@"; do
		top_row "$name.log" "$name.out" "$w"
		case $row in
		*" keep  py_wsgi.py:7"*) ;;
		*) fail "$name: worker $w's top row is not keep py_wsgi.py:7: '$row'"
		   sed 's/^/  out: /' "$name.out" >&2 ;;
		esac
	done
}

gunicorn c --snap-every +8MiB
# on growth: the master's start (30 MiB over its exec) does not fire the
# trigger, and each worker captures when it grows, its parent not capturing
gunicorn d --capture growth -t +10MiB --snap-every +8MiB
expect_no_grep "^# event [0-9.]* $master trigger " d.log
for w in $workers; do
	expect_grep "^# event [0-9.]* $w trigger " d.log
done
finish
