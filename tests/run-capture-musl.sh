#!/bin/sh
# run-capture-musl.sh: a dynamically linked musl program (Debian's musl-gcc)
# takes no agent (musl's loader refuses it, and the program would not start):
# snap -p and -p say it is musl, with the hint; memwatch run starts it
# without the agent and exits with its own status. Judged by its interpreter,
# not by names: the same program linked to a copy of musl's loader under a
# name of no C library is judged the same. And a musl program that the
# command starts in turn starts too.
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

# started by what the command starts: a glibc shell script that execs the
# musl program (an image's entrypoint), and a shell that forks it, with and
# without --children: the shells take the agent, the musl program starts
# (its loader finds no agent to load) and its status comes back
printf '#!/bin/sh\nexec "$@"\n' >wrap.sh
chmod +x wrap.sh
rm -f "$tmp/wrap.go" wrap.out
"$MEMWATCH" run -o wrap.log -- ./wrap.sh "$tmp/musl_target" "$tmp/wrap.go" >wrap.out 2>err &
mw=$!
started_pids="$started_pids $mw"
wait_until "grep -q '^up ' wrap.out" 30
p=$(sed -n 's/^up \([0-9]*\) .*/\1/p' wrap.out)
if [ -n "$p" ]; then
	expect_no_grep 'libmemwatch-agent' "/proc/$p/maps"
else
	fail "the musl program exec'd by a script did not start under memwatch run"
	sed 's/^/  stderr: /' err >&2
fi
touch "$tmp/wrap.go"
wait "$mw"
status=$?
[ "$status" -eq 3 ] || { fail "wrap.sh: memwatch run exited $status, expected the program's 3"; sed 's/^/  stderr: /' err >&2; }
expect_grep '^done 1$' wrap.out
expect_no_grep 'Error (relocating|loading)' err

touch "$tmp/forked.go"
for c in "" --children; do
	"$MEMWATCH" run $c -o "forked$c.log" -- \
		sh -c '"$1" "$2"; s=$?; echo "status $s"; exit $s' sh "$tmp/musl_target" "$tmp/forked.go" \
		>forked.out 2>err
	status=$?
	[ "$status" -eq 3 ] || { fail "sh -c (${c:-no --children}): memwatch run exited $status, expected 3"; sed 's/^/  stderr: /' err >&2; }
	expect_grep '^done 1$' forked.out
	expect_grep '^status 3$' forked.out
	expect_no_grep 'Error (relocating|loading)' err
done
# started by the command, under --children
check_noagent_child musl "$tmp/musl_target" \
	'uses musl libc \(its ELF interpreter is /[^)]*\)' 'the agent is built for glibc' "$hint"
finish
