#!/bin/sh
# run-agent-ownunwind.sh: the agent carries a libunwind of its own, private to
# it. A program that unwinds itself with Debian's libunwind8 (unw_backtrace),
# and one linked with LLVM's libunwind (Debian's libunwind-14,
# _Unwind_Backtrace), keep their own: the same unwinder and the same backtraces
# before and after memwatch attaches, and memwatch's report names their
# growth (own_grow) with file and line. The installed agent's ldd lists only
# glibc's libraries and the loader, and its dynamic symbol table exports no
# unw_ or lzma_ symbol (nor any but its entry point).
. "$top_srcdir/tests/lib.sh"
need_ptrace

# the agent: nothing needed but glibc, nothing exported but its entry point
ldd "$MEMWATCH_AGENT" > ldd.txt || fail "ldd $MEMWATCH_AGENT failed"
sed 's/^/  | /' ldd.txt
awk '$1 !~ /^(linux-vdso\.so\.1|libc\.so\.6|libpthread\.so\.0|libdl\.so\.2|libm\.so\.6|librt\.so\.1|\/lib64\/ld-linux-x86-64\.so\.2)$/' \
	ldd.txt > other.txt
[ ! -s other.txt ] || fail "the agent needs libraries other than glibc's: $(cat other.txt)"
nm -D --defined-only "$MEMWATCH_AGENT" > dynsym.txt || fail "nm -D $MEMWATCH_AGENT failed"
! grep -E ' (_U|_UL|_Ux86_64_|unw_|lzma_|crc32|inflate|deflate|_Unwind_)' dynsym.txt ||
	fail "the agent exports symbols of libunwind, liblzma or zlib"
awk '{ print $NF }' dynsym.txt > exported.txt
[ "$(cat exported.txt)" = memwatch_agent_start ] ||
	fail "the agent exports more than memwatch_agent_start: $(tr '\n' ' ' < exported.txt)"
nm -D --undefined-only "$MEMWATCH_AGENT" > undef.txt
! grep -E ' (_U|unw_|lzma_|crc32|_Unwind_)' undef.txt || fail "the agent takes unwinding or compression symbols from elsewhere"

# own_unwinder NAME PROGRAM LIB: the program unwinds with LIB before and after
# the agent comes, the same frames; memwatch names own_grow
own_unwinder() {
	local name=$1 prog=$2 lib=$3
	start_fifo_target "$name" "$prog"
	local pid=$target_pid
	wait_ready "$name" 0 || return
	sed -n 's/^bt 0: //p' "$name.out" > "$name.bt0"
	grep -q 'own_level1$' "$name.bt0" || fail "$name: its backtrace has no own_level1: $(cat "$name.bt0")"
	expect_grep "^uses $lib\$" "$name.out"
	# it grows for about 3 s from own_grow; memwatch attaches and samples 2 s
	step "$name"
	run_mw 0 snap -p "$pid" -w 2s -o "$name.snap"
	expect_grep "^memwatch: pid $pid: agent attached" err
	run_mw 0 show "$name.snap"
	expect_grep "own_grow +agent_ownunwind\.c:[0-9]+" out
	wait_ready "$name" 1 || return
	grep -q libmemwatch-agent "/proc/$pid/maps" || fail "$name: no agent in the process"
	sed -n 's/^bt 1: //p' "$name.out" > "$name.bt1"
	[ "$(grep -c "^uses $lib\$" "$name.out")" -eq 2 ] ||
		fail "$name: its unwinder moved: $(grep '^uses' "$name.out" | tr '\n' ' ')"
	cmp -s "$name.bt0" "$name.bt1" || {
		fail "$name: its backtrace changed once the agent was loaded:"
		diff "$name.bt0" "$name.bt1" >&2
	}
	# and again with capture on: the agent sampling while it unwinds
	run_mw 0 -p "$pid" -i 250ms -d 4s -q --capture now -o "$name.log" &
	local mw=$!
	wait_until "grep -q 'capture-start' '$name.log' 2> /dev/null" 20
	step "$name"
	wait_ready "$name" 2 || return
	wait "$mw"
	sed -n 's/^bt 2: //p' "$name.out" > "$name.bt2"
	cmp -s "$name.bt0" "$name.bt2" || {
		fail "$name: its backtrace changed while the agent sampled:"
		diff "$name.bt0" "$name.bt2" >&2
	}
	end_target "$name"
	wait_until "grep -q '^ok\$' '$name.out'" 10
}

own_unwinder u8 "$TARGETS/agent_ownunwind" libunwind.so.8
if [ -x "$TARGETS/agent_llvmunwind" ]; then
	own_unwinder llvm "$TARGETS/agent_llvmunwind" libunwind.so.1
else
	echo "no LLVM libunwind (Debian's libunwind-14) at build time: that program is not tried"
fi
finish
