#!/bin/sh
# run-python-typecache.sh: a name that CPython's type attribute cache holds
# (3.10 on: the slot is chosen by the name's address) is not counted live
# for as long as the cache keeps it. py_typecache.py makes its attribute
# names afresh at every call (the standard library's email.utils.formatdate,
# and getattr with built names) and keeps nothing; a sampled name, at an
# address of its own, would otherwise stay in the cache, each standing for a
# sampling interval of heap (hundreds of MiB in seconds). On every CPython
# the agent reads here (Debian's 3.11 and its debug build, pyenv's 3.8 to
# 3.13, the sid root's 3.14 and 3.15), attached by memwatch snap at the
# default rate for 3 s: the snapshot's live heap is at most 8 samples, the
# script's results stay right, and it ends with ok when told to.
# Some 40 s on a 2-core machine.
# limit: 300
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace

target=$top_srcdir/tests/targets/py_typecache.py
readable_cpythons
[ -n "$cpythons" ] || skip "no CPython the agent reads is installed (sh tests/install-deps.sh --tests)"

for c in $cpythons; do
	label=${c%%=*}
	py=${c#*=}
	name=tc-$label
	snap_stopfile "$name" "$py" "$target" || continue
	run_mw 0 show "$name.snap"
	cp out "$name.show"
	samples=$(sed -n 's/^memory   live heap .* (\([0-9]*\) samples in .*/\1/p' "$name.show")
	echo "$label: $(sed -n 's/^memory   //p' "$name.show"); $(tail -n 1 "$name.out") calls"
	if [ -z "$samples" ]; then
		fail "$label: no live heap line in the snapshot"
		sed 's/^/  | /' "$name.show" >&2
	elif [ "$samples" -gt 8 ]; then
		fail "$label: $samples samples live in a process that keeps nothing"
		sed 's/^/  | /' "$name.show" | head -n 20 >&2
	fi
done
finish
