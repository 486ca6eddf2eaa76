#!/bin/sh
# tests/stress.sh: runs the test suite N times and counts its flakes.
#   sh tests/stress.sh N [MAKE-ARGUMENTS...]
# Run in a configured build directory (the source tree, or build-asan with
# sh ../tests/stress.sh); MAKE-ARGUMENTS go to each make check, e.g.
# TESTS='tests/run-foo.sh tests/run-bar.sh'. After each run it prints that
# run's counts and time; at the end, each test that failed (FAIL, ERROR or
# XPASS) at least once with its count, most first. The logs of every failure
# are kept in stress-logs/RUN/. Exit status: 0 when no test failed.
set -u
n=${1:-}
case $n in '' | *[!0-9]* | 0)
	echo "usage: sh tests/stress.sh N [MAKE-ARGUMENTS...]" >&2
	exit 2
	;;
esac
shift
[ -f Makefile ] || { echo "stress: run it in a configured build directory" >&2; exit 2; }
make=${MAKE:-make}
rm -rf stress-logs
mkdir -p stress-logs
: > stress-logs/failures
run=1
while [ "$run" -le "$n" ]; do
	s=$(date +%s)
	$make check "$@" > "stress-logs/check-$run.out" 2>&1
	rc=$?
	secs=$(($(date +%s) - s))
	pass=0 fail=0 skip=0
	# every test's result, from its .trs (make check remade all of them)
	for trs in $(find . -name '*.trs' -newer "stress-logs/failures" 2> /dev/null | sort); do
		r=$(sed -n 's/^:test-result: *\([A-Z]*\).*/\1/p' "$trs" | head -n 1)
		t=${trs#./}
		t=${t%.trs}
		case $r in
		PASS | XFAIL) pass=$((pass + 1)) ;;
		SKIP) skip=$((skip + 1)) ;;
		*)
			fail=$((fail + 1))
			echo "$t" >> stress-logs/failures
			mkdir -p "stress-logs/$run/$(dirname "$t")"
			cp "$t.log" "stress-logs/$run/$t.log" 2> /dev/null
			;;
		esac
	done
	if [ $((pass + fail + skip)) -eq 0 ]; then
		echo "run $run: no test ran (make check exit $rc; see stress-logs/check-$run.out)"
		echo "(make check)" >> stress-logs/failures
	else
		echo "run $run: $pass passed, $fail failed, $skip skipped, $secs s"
	fi
	# the next run's results are the .trs files newer than this mark
	touch stress-logs/failures
	run=$((run + 1))
done
if [ -s stress-logs/failures ]; then
	echo "failed at least once, of $n runs:"
	sort stress-logs/failures | uniq -c | sort -k1,1rn -k2 |
		awk -v n="$n" '{ printf "  %d/%d  %s\n", $1, n, $2 }'
	exit 1
fi
echo "no test failed in $n runs"
