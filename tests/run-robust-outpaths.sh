#!/bin/sh
# run-robust-outpaths.sh: every output path memwatch writes (show -o, diff -o,
# plot -o, show -E, snap -o, the run log) replaces only a regular file: a
# symbolic link is followed and stays a link, a FIFO and a character device are
# written as they are and stay what they were, a full device gives one line
# (ENOSPC), a directory and a link to nothing give one line and are left alone.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"

A=$top_srcdir/tests/data/report_a.snap
B=$top_srcdir/tests/data/report_b.snap
LOG=$top_srcdir/tests/data/plot-one.log
kinds="show diff embed snap log"
command -v "${MEMWATCH_GNUPLOT:-gnuplot}" >/dev/null 2>&1 && kinds="$kinds plot" ||
	echo "no gnuplot: the plot cases are left out" >&2
need_ptrace

# a live process with an agent in it, for snap (-w 0 then takes no time) and
# for the run log
start_target "$robust" stacks 64 0 > target.out
tp=$target_pid
wait_until "grep -q ready target.out" 20
"$MEMWATCH" snap -p "$tp" -w 1s -o first.snap >snap1.out 2>snap1.err ||
	{ cat snap1.err >&2; fail "snap -p $tp did not attach"; finish; }

# out_run KIND STATUS PATH: write KIND's output to PATH, expecting STATUS.
out_run() {
	case $1 in
	show) run_mw "$2" show -o "$3" "$A" ;;
	diff) run_mw "$2" diff -o "$3" "$A" "$B" ;;
	plot) run_mw "$2" plot -f -o "$3" "$LOG" ;;
	embed) run_mw "$2" show -E "$3" "$A" ;;
	snap) run_mw "$2" snap -p "$tp" -w 0 -f -o "$3" ;;
	log) run_mw "$2" -p "$tp" --capture never -q -i 100ms -d 300ms -f -o "$3" ;;
	esac
}

# out_valid KIND FILE: FILE holds what KIND writes.
out_valid() {
	case $1 in
	show | diff) grep -q 'live' "$2" || fail "$1: '$2' is not a report" ;;
	plot) [ "$(head -c 4 "$2" | od -An -c | tr -d ' ')" = '211PNG' ] || fail "plot: '$2' is not a PNG" ;;
	embed | snap) snaps_complete "$1" "$2"; [ -s "$2" ] || fail "$1: '$2' is empty" ;;
	log) head -n 1 "$2" | grep -q '^# memwatch run.log' || fail "log: '$2' is not a run log" ;;
	esac
}

for k in $kinds; do
	mkdir "$k" && cd "$k" || exit 99

	# a symbolic link to a regular file: the file gets the output, the link stays
	echo old > real
	ln -s real link
	out_run "$k" 0 link
	[ -L link ] || fail "$k: the symbolic link was replaced"
	out_valid "$k" real
	# and through a chain of links into another directory
	mkdir sub && echo old > sub/deep && ln -s sub/deep link2 && ln -s link2 link1
	out_run "$k" 0 link1
	[ -L link1 ] && [ -L link2 ] || fail "$k: a link of the chain was replaced"
	out_valid "$k" sub/deep

	# a link to nothing: one line, nothing created
	ln -s nowhere dangling
	out_run "$k" 1 dangling
	expect_err_line "cannot write 'dangling': it is a symbolic link to a file that does not exist"
	[ -L dangling ] && [ ! -e nowhere ] || fail "$k: the dangling link was followed or replaced"

	# a directory: one line, left alone
	mkdir adir
	out_run "$k" 1 adir
	expect_err_line "cannot write 'adir': it is a directory"
	[ -d adir ] && [ -z "$(ls adir)" ] || fail "$k: the directory was changed"

	# a FIFO: a reader gets the bytes, the FIFO stays a FIFO
	mkfifo fifo || fail "mkfifo"
	cat fifo > fromfifo &
	reader=$!
	out_run "$k" 0 fifo
	if [ -p fifo ]; then
		wait_until "! kill -0 $reader 2>/dev/null" 20 || kill "$reader" 2>/dev/null
		wait "$reader" 2>/dev/null
		out_valid "$k" fromfifo
	else
		fail "$k: the FIFO was replaced"
		kill "$reader" 2>/dev/null
		wait "$reader" 2>/dev/null
	fi

	# devices of our own (never the system's /dev/null and /dev/full)
	if mknod null c 1 3 2>/dev/null && mknod full c 1 7 2>/dev/null && echo x 2>/dev/null > null; then
		out_run "$k" 0 null
		[ -c null ] || fail "$k: the null device was replaced"
		out_run "$k" 1 full
		expect_err_line "cannot write 'full': No space left on device"
		[ -c full ] || fail "$k: the full device was replaced"
	else
		echo "$k: cannot make device nodes here (not root, or nodev): device cases left out" >&2
	fi
	no_temp_files "$k"
	cd .. || exit 99
done

# an existing FIFO or character device needs no --force (nothing is replaced);
# a regular file behind a symbolic link still does
cd snap || exit 99
mkfifo fifo2
cat fifo2 > fromfifo2 &
reader=$!
run_mw 0 snap -p "$tp" -w 0 -o fifo2
wait_until "! kill -0 $reader 2>/dev/null" 20 || kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
snaps_complete "snap to a FIFO without --force" fromfifo2
run_mw 1 snap -p "$tp" -w 0 -o link
expect_err_line "'link' exists \(use --force to overwrite\)"
cd .. || exit 99

grep -Eq '^State:[[:space:]]*[SR]' "/proc/$tp/status" 2>/dev/null ||
	fail "the target is not running after the snapshots"
finish
