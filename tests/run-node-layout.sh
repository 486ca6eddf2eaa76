#!/bin/sh
# run-node-layout.sh: the agent's table of V8 layouts (src/agent/v8layout.c,
# dumped by tests/tools/v8layout-dump) against the headers of each V8 found
# here: a C++ program compiled against a version's include/node prints the
# offsets and sizes of v8::AllocationProfile's Node, Allocation and Sample,
# the slots of its virtual functions, v8::HandleScope's size, whether
# String::WriteUtf8 is still declared, and for a V8 whose HandleScope is
# inline the offset and layout of the isolate's HandleScopeData; each must be
# the table's entry for that version. And where the version's node binary or
# libnode is here too, it exports every function the entry has the agent
# call. Headers: the nodejs package's /usr/include/node (V8 11.3), and those
# tests/install-deps.sh --tests unpacks (node 22, 24, 26: V8 12.4, 13.6,
# 14.6; Debian sid's libnode-dev in its root: 13.6). Skips when none is here.
. "$top_srcdir/tests/lib.sh"

DUMP=$top_builddir/tests/tools/v8layout-dump
cxx=${CXX:-c++}
command -v "$cxx" >/dev/null 2>&1 || skip "no C++ compiler ($cxx)"
[ -x "$DUMP" ] || fail "no $DUMP (make check builds it)"

cat >layout.cc <<'CC'
#include <v8-internal.h>
#include <v8-local-handle.h>
#include <v8-primitive.h>
#include <v8-profiler.h>
#include <v8-version.h>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>
using AP = v8::AllocationProfile;
#define P(name, value) std::printf("%s %zu\n", name, (size_t)(value))

// The vtable slot of a virtual member function: the Itanium C++ ABI's
// pointer to member holds 1 + its offset in the vtable.
template <typename F> static size_t slot(F f)
{
	size_t raw;
	std::memcpy(&raw, &f, sizeof raw);
	return (raw - 1) / sizeof(void *);
}

// String::WriteUtf8 declared (up to V8 14.x, where only WriteUtf8V2 is)?
template <typename S, typename = void> struct has_write_utf8 : std::false_type {};
template <typename S>
struct has_write_utf8<S, decltype((void)&S::WriteUtf8)> : std::true_type {};
template <typename S, typename = void> struct has_write_utf8_v2 : std::false_type {};
template <typename S>
struct has_write_utf8_v2<S, decltype((void)&S::WriteUtf8V2)> : std::true_type {};

int main()
{
	std::printf("version %d.%d\n", V8_MAJOR_VERSION, V8_MINOR_VERSION);
	P("node_name", offsetof(AP::Node, name));
	P("node_script_name", offsetof(AP::Node, script_name));
	P("node_line", offsetof(AP::Node, line_number));
	P("node_column", offsetof(AP::Node, column_number));
	P("node_id", offsetof(AP::Node, node_id));
	P("node_children", offsetof(AP::Node, children));
	P("node_allocations", offsetof(AP::Node, allocations));
	P("alloc_size", sizeof(AP::Allocation));
	P("alloc_bytes", offsetof(AP::Allocation, size));
	P("alloc_count", offsetof(AP::Allocation, count));
	P("sample_size", sizeof(AP::Sample));
	P("sample_node_id", offsetof(AP::Sample, node_id));
	P("hs_size", sizeof(v8::HandleScope));
	// the newest string function the headers declare is the one read with
	std::printf("strings %s\n", has_write_utf8_v2<v8::String>::value ? "WriteUtf8V2" : "WriteUtf8");
	std::printf("write_utf8 %s\n", has_write_utf8<v8::String>::value ? "declared" : "gone");
#if V8_MAJOR_VERSION >= 14
	std::printf("scope inline\n");
	P("hs_data", v8::internal::Internals::kIsolateHandleScopeDataOffset);
	P("hsd_next", offsetof(v8::internal::HandleScopeData, next));
	P("hsd_limit", offsetof(v8::internal::HandleScopeData, limit));
	P("hsd_level", offsetof(v8::internal::HandleScopeData, level));
	P("hsd_sealed_level", offsetof(v8::internal::HandleScopeData, sealed_level));
#else
	std::printf("scope called\n");
#endif
	P("vt_root", slot(&AP::GetRootNode));
	P("vt_samples", slot(&AP::GetSamples));
	// the destructors follow, complete then deleting: nothing else is virtual
	P("vt_delete", slot(&AP::GetSamples) + 2);
	static_assert(sizeof(AP) == sizeof(void *), "AllocationProfile holds only its vtable pointer");
	static_assert(std::is_polymorphic<AP>::value, "AllocationProfile is polymorphic");
	return 0;
}
CC

# exports BINARY ENTRY: BINARY exports the functions the agent calls for the
# table's ENTRY (a v8layout-dump output)
exports() {
	local sym
	nm -D --defined-only "$1" >syms.txt 2>nm.err || { fail "nm -D $1: $(head -n 1 nm.err)"; return; }
	for sym in _ZN2v82V810GetVersionEv _ZN2v87Isolate13TryGetCurrentEv \
		_ZN2v87Isolate16RequestInterruptEPFvPS0_PvES2_ _ZN2v87Isolate15GetHeapProfilerEv \
		_ZN2v812HeapProfiler25StartSamplingHeapProfilerEmiNS0_13SamplingFlagsE \
		_ZN2v812HeapProfiler24StopSamplingHeapProfilerEv _ZN2v812HeapProfiler20GetAllocationProfileEv \
		_ZN2v87Isolate9InContextEv _ZN2v87Isolate17GetCurrentContextEv \
		_ZN4node21GetCurrentEnvironmentEN2v85LocalINS0_7ContextEEE \
		_ZN4node25AddEnvironmentCleanupHookEPN2v87IsolateEPFvPvES3_ \
		_ZN4node11per_process14v8_initializedE _ZN4node16RequestInterruptEPNS_11EnvironmentEPFvPvES2_ \
		$(grep -q '^strings WriteUtf8V2$' "$2" && echo _ZNK2v86String11WriteUtf8V2EPNS_7IsolateEPcmiPm ||
			echo _ZNK2v86String9WriteUtf8EPNS_7IsolateEPciPii) \
		$(grep -q '^scope inline$' "$2" && echo _ZN2v811HandleScope16DeleteExtensionsEPNS_7IsolateE ||
			echo _ZN2v811HandleScopeC1EPNS_7IsolateE _ZN2v811HandleScopeD1Ev); do
		grep -q " $sym\$" syms.txt || fail "$1 does not export $sym, which the agent calls on V8 $(sed -n 's/^version //p' headers.txt)"
	done
}

# check NAME INCLUDEDIR [BINARY]: the headers in INCLUDEDIR against the table
check() {
	local v
	[ -r "$2/v8-profiler.h" ] || { echo "$1: no headers in $2: skipped"; return 1; }
	"$cxx" -std=c++20 -w -I"$2" layout.cc -o layout >cc.out 2>&1 ||
		{ fail "$1: cannot compile against $2: $(head -n 5 cc.out)"; return 0; }
	./layout >headers.txt || { fail "$1: the layout program failed"; return 0; }
	v=$(sed -n 's/^version //p' headers.txt)
	if ! "$DUMP" "$v" >table.txt 2>dump.err; then
		fail "$1: V8 $v's headers are here, but the agent has no entry for V8 $v: $(cat dump.err)"
		return 0
	fi
	# a string function the agent calls is declared
	if grep -q '^strings WriteUtf8$' table.txt && grep -q '^write_utf8 gone$' headers.txt; then
		fail "$1: the agent calls String::WriteUtf8, which V8 $v's headers no longer declare"
	fi
	[ "$(sed -n 's/^hs_size //p' headers.txt)" -le "$(sed -n 's/^hs_room //p' table.txt)" ] ||
		fail "$1: V8 $v's HandleScope is larger than the room the agent gives it"
	grep -v '^version \|^write_utf8 ' headers.txt | while read -r name value; do
		mine=$(awk -v n="$name" '$1 == n { print $2 }' table.txt)
		[ "$mine" = "$value" ] || fail "$1: V8 $v's $name: the agent's table says '$mine', the headers $value"
	done
	echo "$1: V8 $v's headers agree with the agent's table"
	if [ -n "${3:-}" ]; then
		if [ -r "$3" ]; then
			exports "$3" table.txt
			echo "$1: $3 exports what the agent calls"
		else
			echo "$1: $3 is not here: its exports not checked"
		fi
	fi
	return 0
}

found=
check "nodejs package" /usr/include/node /usr/bin/node && found=1
for n in 22 24 26; do
	check "node $n" "/opt/memwatch-tests/node$n/include/node" "/opt/memwatch-tests/node$n/bin/node" && found=1
done
check "Debian sid's libnode-dev" /opt/memwatch-tests/sid/usr/include/node \
	/opt/memwatch-tests/sid/usr/lib/x86_64-linux-gnu/libnode.so.137 && found=1
[ -n "$found" ] || skip "no V8 headers here (sh tests/install-deps.sh --tests)"
finish
