#!/bin/sh
# run.sh: build a libFuzzer target with clang and run it for a bounded time.
#   tests/fuzz/run.sh NAME SECONDS
# NAME picks tests/fuzz/fuzz_NAME.c and its seed corpus tests/fuzz/corpus/NAME/.
# New inputs go to a scratch corpus, not the committed one. Prints the number of
# executions; exits non-zero on a finding (crash, leak, timeout, sanitizer report),
# whose input is kept in the scratch directory and named on stderr.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 NAME SECONDS" >&2
	exit 2
fi
name=$1
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
CC=${CC_FUZZ:-clang}

# The sources each target needs besides its own file.
case $name in
snapshot) sources="$top/snapshot/snapshot.c $top/snapshot/snapdecode.c"; libs="-lz" ;;
options) sources="$top/src/util.c $top/src/trigger.c"; libs="-lm" ;;
runlog) sources="$top/src/runlog-read.c $top/src/util.c"; libs="-lm" ;;
*) echo "$0: unknown fuzz target '$name'" >&2; exit 2 ;;
esac

work=${FUZZ_WORKDIR:-${TMPDIR:-/tmp}/memwatch-fuzz-$name}
mkdir -p "$work/corpus" "$work/artifacts"
# The code includes config.h from the build; the parts fuzzed need nothing from it.
: > "$work/config.h"

"$CC" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-D_GNU_SOURCE -DPKGLIBDIR='"."' -DPKGDATADIR='"."' \
	-I"$work" -I"$top/src" -I"$top/snapshot" \
	"$here/fuzz_$name.c" $sources $libs -o "$work/fuzz_$name"

seeds="$here/corpus/$name"
status=0
"$work/fuzz_$name" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
	-rss_limit_mb=2048 -artifact_prefix="$work/artifacts/" \
	"$work/corpus" "$seeds" >"$work/log" 2>&1 || status=$?

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
echo "fuzz_$name: ${execs:-?} executions (time limit ${seconds}s), corpus $(ls "$work/corpus" | wc -l) inputs"
found=$(ls "$work/artifacts" 2>/dev/null | head -n 5)
if [ "$status" -ne 0 ] || [ -n "$found" ]; then
	echo "fuzz_$name: finding (status $status); inputs in $work/artifacts/:" >&2
	for f in $found; do echo "  $f" >&2; done
	grep -E 'ERROR|SUMMARY|runtime error' "$work/log" | head -n 10 >&2
	exit 1
fi
exit 0
