#!/bin/sh
# mimalloc-overhead.sh: what the agent costs a program that calls mimalloc's
# own API: overhead.sh's workload built with its malloc and free calls made
# mi_malloc and mi_free (Debian's libmimalloc-dev), measured by overhead.sh
# side by side in one run (plain, agent idle, capturing at the default rate,
# at 64 KiB, at 4 KiB, every allocation, and heaptrack where installed), as
# ratios to the plain run. The blocks go through the hooks of mimalloc.c.
#
# Usage: bench/mimalloc-overhead.sh [OVERHEAD.SH OPTIONS] [BUILDDIR]
#   BUILDDIR holds .libs/libmemwatch-agent.so (default: .); the options are
#   overhead.sh's (-q: a quick run; -t "1 2"; -r REPEATS; -s small|churn).
set -u
src=$(cd "$(dirname "$0")" && pwd)
build=.
# the last argument is the build directory when it is one
for a in "$@"; do
	build=$a
done
[ -d "$build/.libs" ] || build=.
agent=${MEMWATCH_AGENT:-$build/.libs/libmemwatch-agent.so}
[ -f "$agent" ] || { echo "mimalloc-overhead.sh: $agent not built" >&2; exit 1; }
[ -f /usr/include/mimalloc.h ] ||
	{ echo "mimalloc-overhead.sh: mimalloc is not installed (libmimalloc-dev)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-bench-mi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bench" "$tmp/.libs"
# the workload's own calls, mimalloc's API: the standard headers first, so
# that only the calls are renamed
cat >"$tmp/mi.h" <<'H'
#include <stdlib.h>
#include <mimalloc.h>
#define malloc(n) mi_malloc(n)
#define free(p) mi_free(p)
H
${CC:-cc} -O2 -g -fno-omit-frame-pointer -pthread -include "$tmp/mi.h" \
	-o "$tmp/bench/workload" "$src/workload.c" -lmimalloc ||
	{ echo "mimalloc-overhead.sh: cannot build the workload with mimalloc" >&2; exit 1; }
nm -u "$tmp/bench/workload" | grep -q ' mi_malloc$' ||
	{ echo "mimalloc-overhead.sh: the workload does not call mi_malloc" >&2; exit 1; }
ln -s "$(cd "$(dirname "$agent")" && pwd)/$(basename "$agent")" "$tmp/.libs/libmemwatch-agent.so"
echo "workload: mi_malloc and mi_free (libmimalloc $(dpkg-query -W -f '${Version}' libmimalloc2.0 2>/dev/null || echo '?'))"
# overhead.sh with the same options, on this build directory
n=$#
i=0
for a in "$@"; do
	i=$((i + 1))
	[ "$i" -eq "$n" ] && [ "$a" = "$build" ] && [ -d "$a/.libs" ] && continue
	set -- "$@" "$a"
done
shift "$n"
MEMWATCH_AGENT= sh "$src/overhead.sh" "$@" "$tmp"
