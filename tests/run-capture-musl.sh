#!/bin/sh
# run-capture-musl.sh: a dynamically linked musl program (Debian's musl-gcc)
# takes no agent (musl's loader refuses it, and the program would not start):
# snap -p and -p say it is musl, with the hint; memwatch run starts it
# without the agent and exits with its own status. Judged by its interpreter,
# not by names: the same program linked to a copy of musl's loader under a
# name of no C library is judged the same.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/noagent-lib.sh"
need_ptrace
command -v musl-gcc >/dev/null 2>&1 || skip "musl-gcc is not installed (Debian package musl-tools)"

musl-gcc -O2 -o musl_target "$top_srcdir/tests/targets/noagent_target.c" ||
	skip "musl-gcc cannot build a program here"
hint='build it with glibc \(gcc rather than musl-gcc'
check_noagent musl "$tmp/musl_target" \
	'uses musl libc \(its ELF interpreter is /[^)]*\)' 'the agent is built for glibc' "$hint"

# musl's loader (its libc.so), named by the first program, copied under a
# name that says nothing
interp=$(readelf -l musl_target | sed -n 's/.*program interpreter: \(.*\)]$/\1/p')
mkdir -p "$tmp/lib"
if [ -z "$interp" ] || ! cp -L "$interp" "$tmp/lib/loader.so.9"; then
	fail "cannot find or copy musl's loader ('$interp')"
fi
musl-gcc -O2 -Wl,--dynamic-linker="$tmp/lib/loader.so.9" -o renamed \
	"$top_srcdir/tests/targets/noagent_target.c" || fail "cannot link against the renamed loader"
check_noagent renamed "$tmp/renamed" \
	"uses musl libc \\(its ELF interpreter is $tmp/lib/loader\\.so\\.9\\)" \
	'the agent is built for glibc' "$hint"
finish
