#!/bin/sh
# run-report-rust.sh: a Rust program built with Debian's rustc, under the
# agent: its names are demangled as rustc-demangle does (legacy and v0
# manglings: no hash, no '$LT$'-style escape), and the frames of Rust's
# standard library (alloc, core, hashbrown, std) are hidden like the C++
# one's, so that the top row is the program's own function.
. "$top_srcdir/tests/lib.sh"

[ -f "$MEMWATCH_AGENT" ] || skip "the agent is not built ($MEMWATCH_AGENT)"
# Debian's rustc (package rustc), not another one found first on PATH
RUSTC=${RUSTC:-/usr/bin/rustc}
[ -x "$RUSTC" ] || skip "no Debian rustc ($RUSTC; package rustc)"
src="$top_srcdir/tests/targets/report_rust.rs"
unset DEBUGINFOD_URLS
L_remember=$(grep -n "LINE:remember" "$src" | cut -d: -f1)

# check_rust legacy|RUSTC-OPTIONS: build the target with that symbol mangling
# (legacy, rustc's default; or RUSTC-OPTIONS, ending in =MANGLING), snapshot
# it, and check the report's names
check_rust() {
	local m=${1##*=}
	# legacy is rustc's default, which it names only as an unstable option
	"$RUSTC" -g -O ${1%legacy} -o "report_rust_$m" "$src" >build.log 2>&1 || {
		sed 's/^/  rustc: /' build.log >&2
		fail "$RUSTC cannot build report_rust.rs ($m mangling)"
		return 0
	}
	nm "report_rust_$m" >nm.out 2>&1 || fail "nm report_rust_$m"
	if [ "$m" = v0 ]; then
		expect_grep ' _RNv.*remember_orders' nm.out
	else
		expect_grep ' _ZN11report_rust15remember_orders17h[0-9a-f]{16}E$' nm.out
	fi
	rm -f target.out
	LD_PRELOAD="$MEMWATCH_AGENT" MEMWATCH_AGENT_OPTIONS=capture=now,rate=1 \
		start_target "./report_rust_$m" >target.out
	wait_until "grep -q ready target.out" 30 || return 0
	run_mw 0 snap -p "$target_pid" -o "$m.snap"
	kill "$target_pid"
	wait "$target_pid" 2>/dev/null

	# 4000 Strings and the map's table: the first row is the program's own
	# function, with its line; hashbrown's, alloc's and std's frames counted
	run_mw 0 show "$m.snap"
	expect_grep "^ +1 +[0-9.]+ KiB .* [0-9]+   report_rust::remember_orders  report_rust\.rs:$L_remember( \[inlined\])?  \(via [0-9-]+ std:: frames\)$" out
	expect_grep "^ +report_rust::main  report_rust\.rs:[0-9]+" out
	# every frame, each named without a hash or an escape
	run_mw 0 show --all-frames --full-names --depth 0 "$m.snap"
	expect_grep "^ +<?hashbrown::raw::RawTable<.*>>?::reserve_rehash(::<.*>)?  " out
	expect_grep "^ +(<alloc::alloc::Global as core::alloc::Allocator>::|alloc::)" out
	expect_no_grep '::h[0-9a-f]{16}( |$)' out
	expect_no_grep '\$(LT|GT|u20|RF|C)\$|\$u[0-9a-f]+\$' out
	expect_no_grep ' _[RZ][A-Za-z0-9_]+ ' out
	# the folded stacks the same
	run_mw 0 show -F folded "$m.snap"
	expect_grep ';report_rust::main;report_rust::remember_orders [0-9]+$' out
}

check_rust legacy
check_rust "-C symbol-mangling-version=v0"
finish
