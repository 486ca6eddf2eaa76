#!/bin/sh
# run-python-blocktypes.sh: the type of each sampled block is read from the
# block itself, never from memory past its end or from a GC object's header.
# py_listkeep.py keeps lists of two ints and drops tuples of two ints; every
# block it keeps is a list, an int or a list's array of items (no object).
# On every CPython the agent reads here, attached by memwatch snap at the
# default rate for 3 s: by type, the snapshot names no other type (before,
# a sampled array of items, in a block from malloc whose earlier tuple left
# its type's address past the array's 16 bytes, was named after it; and a
# list, whose header's pointer to the previous object passed for a type,
# was named after that object's type's reference count: "(" or "+"), and
# lists and ints hold at least a tenth of the bytes each, and alike in
# release builds (0.6 to 1.6 times: each list holds two ints of half its
# size).
# Some 60 s on a 2-core machine.
# limit: 400
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace

target=$top_srcdir/tests/targets/py_listkeep.py
readable_cpythons
[ -n "$cpythons" ] || skip "no CPython the agent reads is installed (sh tests/install-deps.sh --tests)"

for c in $cpythons; do
	label=${c%%=*}
	py=${c#*=}
	name=bt-$label
	snap_stopfile "$name" "$py" "$target" || continue
	run_mw 0 show --by type -n 20 "$name.snap"
	cp out "$name.types"
	# the type rows: "RANK BYTES ... SHARE BLOCKS SAMPLES TYPE" (a type
	# recycled still is said so after its name)
	awk '/^ +[0-9]+ +[0-9.]+ [KMG]?i?B / { sub(/^ +[0-9]+ +/, ""); sub(/.*%  +[0-9]+ +[0-9]+\?? +/, ""); print }' \
		"$name.types" >"$name.names"
	echo "$label: $(sed -n 's/^ *[0-9][0-9]* *\([0-9.]* [KMG]*i*B\) .* \([0-9.]*%\) .*/\1 \2/p' "$name.types" | tr '\n' ',') $(tr '\n' ',' <"$name.names")"
	if grep -Evq '^(list|int|<not an object>)( recycled)?$' "$name.names"; then
		fail "$label: a type that py_listkeep.py does not keep: $(grep -Ev '^(list|int|<not an object>)( recycled)?$' "$name.names" | tr '\n' ' ')"
		sed 's/^/  | /' "$name.types" >&2
	fi
	# the shares of list and int, in tenths of a percent
	for k in list int; do
		share=$(awk -v k="$k" '/^ +[0-9]+ +[0-9.]+ [KMG]?i?B / { s = $0; sub(/.*%  +[0-9]+ +[0-9]+\?? +/, "", s)
			if (s == k || s == k " recycled") { for (i = 1; i <= NF; i++) if ($i ~ /%$/) { sub(/%/, "", $i); print int($i * 10) } } }' \
			"$name.types" | head -n 1)
		eval "share_$k=\${share:-0}"
	done
	[ "$share_list" -ge 100 ] || fail "$label: list holds $share_list/1000 of the bytes, expected >= 10 %"
	[ "$share_int" -ge 100 ] || fail "$label: int holds $share_int/1000 of the bytes, expected >= 10 %"
	# ints are as many bytes as the lists (two of 32 bytes to a list of
	# 64; not so in a debug build, whose debug hooks add 24 bytes to each):
	# before, the sample point owed to the next tuple made, after a
	# dropped one's, fell on the next block of its size, a kept list, and
	# lists read twice the ints
	if [ "$share_list" -ge 100 ] && case $label in *dbg) false ;; esac &&
		! awk -v a="$share_int" -v b="$share_list" 'BEGIN { exit !(a / b >= 0.6 && a / b <= 1.6) }'; then
		fail "$label: ints hold $share_int/1000 of the bytes and lists $share_list/1000, expected alike"
		sed 's/^/  | /' "$name.types" >&2
	fi
done
finish
