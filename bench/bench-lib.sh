# bench/bench-lib.sh: sourced by bench/overhead.sh and bench/mmap-overhead.sh,
# which run a workload under several agent variants, repeated and interleaved,
# and print medians.

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
