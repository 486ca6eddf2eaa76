#!/bin/sh
# run-help-man.sh: --help and the man page's SYNOPSIS name the same options, and
# every command has its own --help.
. "$top_srcdir/tests/lib.sh"

run_mw 0 --help
# options in --help: every --long and -x token
grep -oE '(^|[ ,[(])--?[a-zA-Z][a-zA-Z0-9-]*' out | sed 's/^[ ,[(]//' | sort -u > help.opts
# options in the man page's SYNOPSIS: groff writes "\-\-long" and "\-x"
sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$top_srcdir/man/memwatch.1" | grep -v '^\.\\"' |
	sed 's/\\-/-/g' | grep -oE '(^|[ "[(])--?[a-zA-Z][a-zA-Z0-9-]*' | sed 's/^[ "[(]//' |
	sort -u > man.opts
if ! cmp -s help.opts man.opts; then
	fail "--help and the SYNOPSIS of memwatch.1 list different options (< --help, > man):"
	diff help.opts man.opts >&2
fi
[ "$(grep -c '' help.opts)" -ge 10 ] || fail "--help lists too few options"

for c in run top snap diff show plot report watch; do
	run_mw 0 $c --help
	expect_grep "memwatch $c|memwatch \[" out
done
finish
