# bench/bench-lib.sh: sourced by the benchmarks that run a workload under
# several agent variants, repeated and interleaved, and print medians:
# overhead.sh and mmap-overhead.sh (variants by agent options), and
# python-overhead.sh and node-overhead.sh (an interpreter attached as a
# running process).

# variant_opts VARIANT: $opts, the MEMWATCH_AGENT_OPTIONS of the variant (idle:
# hooks in, capture off; default, r64k, r4k, rate1: capturing at that rate);
# empty for the others (plain, and what a script runs its own way).
variant_opts() {
	case $1 in
	idle) opts=capture=idle ;;
	default) opts=capture=now ;;
	r64k) opts=capture=now,rate=65536 ;;
	r4k) opts=capture=now,rate=4096 ;;
	rate1) opts=capture=now,rate=1 ;;
	*) opts= ;;
	esac
}

# run_repeats THREADS: $repeats rounds of "run VARIANT THREADS" (the script's
# own) over $variants, each round running every variant once, so that a noisy
# machine hurts them alike.
run_repeats() {
	local i=0 v
	while [ $i -lt "$repeats" ]; do
		for v in $variants; do
			run "$v" "$1"
		done
		i=$((i + 1))
	done
}

# median COLUMN FILE
median() {
	cut -d' ' -f"$1" "$2" | sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print 0 }'
}

# median_in: the median of the numbers on standard input (the mean of the two
# middle ones for an even count).
median_in() {
	sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# attached_run VARIANT STATUS COMMAND...: one run of a workload that prints
# "ready", waits for a line on its standard input, then times its rounds and
# prints "wall_s=W cpu_s=C" (and " maxrss_kib=K"). VARIANT plain: as it is;
# attached: the agent loaded by memwatch snap -p (which captures for a moment,
# ended before the rounds); capture: also capturing at $RATE (default 512 KiB)
# from before the rounds, once agentctl's status matches the grep pattern
# STATUS; prev: the same with a previous build's memwatch and agentctl
# ($prev_mw, $prev_ctl). Appends "W C K" to $tmp/VARIANT. Needs $mw, $ctl and
# $tmp.
attached_run() {
	local v=$1 ready=$2 pid hold c="" mw=$mw ctl=$ctl
	shift 2
	[ "$v" = prev ] && mw=$prev_mw ctl=$prev_ctl
	rm -f "$tmp/in" "$tmp/out"
	mkfifo "$tmp/in"
	"$@" <"$tmp/in" >"$tmp/out" 2>&1 &
	pid=$!
	sleep 3600 >"$tmp/in" &
	hold=$!
	while ! grep -q ready "$tmp/out" 2>/dev/null; do sleep 0.05; done
	if [ "$v" != plain ]; then
		"$mw" snap -p "$pid" -w 100ms -f -o "$tmp/a.snap" >/dev/null 2>&1 ||
			echo "${0##*/}: attach failed" >&2
	fi
	if [ "$v" = capture ] || [ "$v" = prev ]; then
		"$ctl" "$pid" start=${RATE:-524288} sleep=3600000 >/dev/null 2>&1 &
		c=$!
		while ! "$ctl" "$pid" status 2>/dev/null | grep -q "$ready"; do sleep 0.05; done
	fi
	echo go >"$tmp/in"
	wait "$pid"
	kill "$hold" 2>/dev/null
	[ -n "$c" ] && kill "$c" 2>/dev/null
	wait 2>/dev/null
	sed -n 's/^wall_s=\([0-9.]*\) cpu_s=\([0-9.]*\)\( maxrss_kib=\([0-9]*\)\)\{0,1\}$/\1 \2 \4/p' \
		"$tmp/out" >>"$tmp/$v"
}

# attached_repeats: $repeats rounds of "run VARIANT" (the script's own) over
# plain, attached and capture (and prev when $prev_mw is set), the order
# turning at every round so that no variant always follows another.
attached_repeats() {
	local i=0 v order all="plain attached capture"
	[ -n "${prev_mw:-}" ] && all="$all prev"
	for v in $all; do
		rm -f "$tmp/$v"
	done
	while [ $i -lt "$repeats" ]; do
		# the list turned left by i
		order=$(echo $all | awk -v i=$i '{ n = NF; s = ""
			for (k = 0; k < n; k++) s = s (k ? " " : "") $(1 + (i + k) % n); print s }')
		for v in $order; do
			run $v
		done
		i=$((i + 1))
	done
}
