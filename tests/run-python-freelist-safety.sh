#!/bin/sh
# run-python-freelist-safety.sh: the agent leaves CPython's free lists to the
# interpreter where no sample is lost, counts what it lists, and empties a
# list from inside a deallocator at each sample point (src/agent/pyfree.c).
# py_freelist_safety.py raises and catches 300 000 exceptions while dicts,
# tuples and lists die with their frames (the pending exception must survive
# a list emptied meanwhile), frees nests 200 000 deep (the trashcan must still
# bound the C stack) and has three threads drop and keep in turn. Started by
# memwatch run on every CPython the agent reads here outside the sid root
# (whose 3.14 and 3.15 run-python-freelist attaches to), at a rate of 64 KiB
# (pymalloc's free left alone) and of 4 KiB (its free wrapped too): the
# script must print its count and exit 0, and memwatch with it.
# Some 60 s alone.
# limit: 300
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"

target=$top_srcdir/tests/targets/py_freelist_safety.py
readable_cpythons
[ -n "$cpythons" ] || skip "no CPython the agent reads is installed (sh tests/install-deps.sh --tests)"

for c in $cpythons; do
	label=${c%%=*} py=${c#*=}
	case $py in
	*/sid-python*) continue ;;    # run inside the root, where the agent is not
	esac
	for rate in 65536 4096; do
		n=$label-$rate
		"$MEMWATCH" run -q -f -r $rate -o $n.log -- "$py" "$target" >$n.out 2>$n.err
		st=$?
		if [ $st -ne 0 ]; then
			fail "$label at a rate of $rate: memwatch run exited $st"
			tail -n 5 $n.err | sed 's/^/  | /' >&2
			continue
		fi
		expect_grep "^ok 300000 300000\$" $n.out
		echo "$label at a rate of $rate: $(cat $n.out)"
	done
done
finish
