#!/bin/sh
# run-help-man.sh: --help and the man page's SYNOPSIS name the same options,
# every command has its own --help, every man page that README.md, --help or
# memwatch(1) names is in man/, installed and listed in memwatch(1)'s SEE
# ALSO, every picture README.md shows is in the tree, and every man page
# renders without a warning.
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

# the pages named: memwatch(1), memwatch-NAME(N), in README.md and --help
run_mw 0 --help
cat "$top_srcdir/README.md" out "$top_srcdir/man/memwatch.1" |
	sed 's/\\-/-/g; s/\\fR//g; s/\\fB//g; s/ (\([1-8]\))/(\1)/g' |
	grep -oE 'memwatch(-[a-z]+)?\([1-8]\)' | sort -u > named
[ "$(grep -c '' named)" -ge 6 ] || fail "README.md, --help and memwatch(1) name too few man pages: $(tr '\n' ' ' < named)"
see_also=$(sed -n '/^\.SH SEE ALSO/,/^\.SH /p' "$top_srcdir/man/memwatch.1" | sed 's/\\-/-/g')
while read -r page; do
	name=${page%(*}
	sec=${page#*(}
	sec=${sec%)}
	file=man/$name.$sec
	[ -f "$top_srcdir/$file" ] || { fail "$page is named but $file is not in the tree"; continue; }
	grep -Eq "(^|[[:space:]])$file([[:space:]]|\\\$|\$)" "$top_srcdir/Makefile.am" ||
		fail "$file is not in Makefile.am's dist_man_MANS: make install leaves it out"
	[ "$name" = memwatch ] && continue
	printf '%s\n' "$see_also" | grep -Eq "^\.BR $name \($sec\)" ||
		fail "$page is not in the SEE ALSO of memwatch(1)"
done < named
# every topic page in man/ is named somewhere
for f in "$top_srcdir"/man/*.[1-8]; do
	b=${f##*/}
	grep -qx "${b%.*}(${b##*.})" named || fail "man/$b is in the tree but README.md, --help and memwatch(1) never name it"
done
# README.md is a front page; the reference is in the man pages
[ "$(grep -c '' "$top_srcdir/README.md")" -le 300 ] ||
	fail "README.md has $(grep -c '' "$top_srcdir/README.md") lines: a front page has at most 300"
# the pictures README.md shows
grep -oE '!\[[^]]*\]\([^)]*\)' "$top_srcdir/README.md" | sed 's/.*(//; s/)$//' > pictures
[ "$(grep -c '' pictures)" -ge 3 ] || fail "README.md shows fewer than three pictures"
while read -r pic; do
	[ -s "$top_srcdir/$pic" ] || fail "README.md shows $pic, which is not in the tree"
	grep -q "$pic" "$top_srcdir/Makefile.am" || fail "README.md shows $pic, which Makefile.am does not distribute"
done < pictures

# every page renders without a warning, as man(1) formats it for a terminal
# (tbl first, for the pages that begin with '\" t)
if ! command -v groff >/dev/null 2>&1; then
	[ "$fails" -eq 0 ] || finish
	skip "groff is not installed (groff-base; sh tests/install-deps.sh --tests)"
fi
for f in "$top_srcdir"/man/*.[1-8]; do
	LC_ALL=C.UTF-8 groff -t -ww -man -Tutf8 -rLL=78n -z "$f" > render.err 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] || [ -s render.err ]; then
		fail "man/${f##*/} does not render cleanly (groff status $rc):"
		sed 's/^/  | /' render.err | head -n 20 >&2
	fi
done
finish
