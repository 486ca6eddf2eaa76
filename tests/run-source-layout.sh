#!/bin/sh
# run-source-layout.sh: the source files keep HACKING.md's rules: each of
# src/, src/agent/ and snapshot/ is named in lowercase words joined by
# hyphens and holds at most 1000 lines, HACKING.md's map names every one of
# them and no source file that is not in the tree, and no file of the agent's
# core names a function or variable of a runtime (CPython's or node's): the
# core reaches them through runtime.h's interface, and runtimes.c's table is
# the one place that names them.
# Generated files (protoc-c's *.pb-c.[ch], made at build time) are not sources.
. "$top_srcdir/tests/lib.sh"

: > sources
for d in src src/agent snapshot; do
	for f in "$top_srcdir/$d"/*.c "$top_srcdir/$d"/*.h; do
		[ -f "$f" ] || continue
		case ${f##*/} in *.pb-c.c | *.pb-c.h) continue ;; esac
		echo "$d/${f##*/}" >> sources
	done
done
[ "$(grep -c '' sources)" -ge 50 ] || fail "too few source files found under $top_srcdir: $(tr '\n' ' ' < sources)"

while read -r f; do
	b=${f##*/}
	printf '%s\n' "$b" | grep -Eqx '[a-z0-9]+(-[a-z0-9]+)*\.[ch]' ||
		fail "$f: a source file's name is lowercase words joined by hyphens (HACKING.md)"
	n=$(grep -c '' "$top_srcdir/$f")
	[ "$n" -le 1000 ] || fail "$f has $n lines: split it by job into files of at most 1000 (HACKING.md)"
	case $b in
	*.c) grep -Fq "$b" "$top_srcdir/HACKING.md" || fail "$f is not in HACKING.md's map" ;;
	esac
done < sources

# the agent's core: every file of src/agent/ that is not a runtime's
for f in "$top_srcdir"/src/agent/*.c "$top_srcdir"/src/agent/*.h; do
	b=${f##*/}
	case $b in
	py*.c | py*.h | python.* | js*.c | js.h | v8*.c | v8*.h | runtimes.c) continue ;;
	esac
	grep -nE '\b(mw_)?(python|py|pyfree|js|v8)_[a-z_]+' "$f" | grep -vE '^[0-9]+:\s*(/\*|\*)' > core.hits
	[ -s core.hits ] && fail "src/agent/$b (the agent's core) names a runtime's function or variable: $(head -n 3 core.hits | tr '\n' ' ')"
done

# every source file the map names is in the tree (a file renamed or split
# away leaves its old name behind)
grep -oE '[A-Za-z0-9_./-]+\.[ch]([^A-Za-z0-9_]|$)' "$top_srcdir/HACKING.md" |
	sed 's/[^A-Za-z0-9_]$//' | sort -u > named
[ "$(grep -c '' named)" -ge 50 ] || fail "HACKING.md names too few source files: $(tr '\n' ' ' < named)"
while read -r n; do
	b=${n##*/}
	case $b in *.pb-c.c | *.pb-c.h) continue ;; esac
	found=$(find "$top_srcdir/src" "$top_srcdir/snapshot" "$top_srcdir/plot" "$top_srcdir/tests" \
		"$top_srcdir/bench" -name "$b" -print 2>/dev/null)
	[ -n "$found" ] || fail "HACKING.md names $n, which is not in the tree"
done < named
finish
