#!/bin/sh
# run-container-jvm.sh: a HotSpot JVM as pid 1 of a container (its own user,
# mount, PID and network namespaces, root and /tmp), leaking through
# Inflaters. memwatch on the host asks it for its perf map under the pid it
# has there (.attach_pid1, /tmp/.java_pid1 and /tmp/perf-1.map in the
# container's /tmp), so the report names the Inflater's methods; then the
# same in a container whose root is an unprivileged host uid, where the host's
# root is nobody to the JVM: memwatch makes the trigger its owner's and
# connects as its owner. The JVM goes on running; nothing is left in its /tmp
# but its socket and its map.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/container-lib.sh"

[ -f "$MEMWATCH_AGENT" ] || skip "the agent is not built ($MEMWATCH_AGENT)"
unset DEBUGINFOD_URLS
need_jdk
# Debian's JDK keeps its configuration in /etc (lib/jvm.cfg links there)
jetc=$(dirname "$(readlink -f "$jdk/lib/jvm.cfg")")

# jvm_container ROOT NAME: InflaterLeak leaking for 60 s as pid 1 of a
# container at ROOT (CT_UID as start_container's); $pid.
jvm_container() {
	make_root "$1"
	mkdir -p "$1/app" "$1$jetc"
	"$jdk/bin/javac" -d "$1/app" "$top_srcdir/tests/targets/InflaterLeak.java" >javac.out 2>&1 ||
		{ fail "javac InflaterLeak.java: $(cat javac.out)"; finish; }
	chmod -R a+rX "$1/app"
	CT_SETUP="mount --bind $jetc \$r$jetc"
	start_container "$1" "$2.out" "$jdk/bin/java" -Xmx64m -cp /app InflaterLeak leak 60
	pid=$ct_pid
	wait_until "grep -q '^ready 1' $2.out" 30
}

# jvm_checks NAME: memwatch -p's report names the Inflater's methods from the
# map the JVM wrote in its own /tmp, under its own pid; the JVM lives on.
jvm_checks() {
	run_mw 0 -p "$pid" -i 200ms -d 10s -q --trigger +8MiB -o "$1.log"
	cp out "$1.report"
	expect_grep "^# event [0-9.]+ $pid jvm-perfmap ms=[0-9.]+ signalled=1$" "$1.log"
	expect_no_grep 'not named' err
	[ -s "/proc/$pid/root/tmp/perf-1.map" ] || fail "$1: the JVM wrote no /tmp/perf-1.map in its root"
	[ -S "/proc/$pid/root/tmp/.java_pid1" ] || fail "$1: the JVM has no attach socket /tmp/.java_pid1"
	[ ! -e "/proc/$pid/root/tmp/.attach_pid1" ] && [ ! -e "/proc/$pid/cwd/.attach_pid1" ] ||
		fail "$1: memwatch left the attach trigger .attach_pid1"
	expect_grep '^ +1 +\+[0-9.]+ [KM]iB .*  [a-z]+ java\.util\.zip\.Inflater\.[a-z<>]+\(.*\)  \(0x[0-9a-f]+\)' "$1.report"
	expect_no_grep 'Full thread dump' "$1.out"
	kill -0 "$pid" 2>/dev/null || fail "$1: the JVM died"
	kill -9 "$pid" 2>/dev/null
}

jvm_container "$tmp/root" a && jvm_checks a

# rootless: the container's root is an unprivileged host uid
CT_UID=100000
jvm_container "$tmp/root2" b &&
	{ grep -Eq "^Uid:[[:space:]]+100000[[:space:]]" "/proc/$pid/status" ||
		fail "the container's root is not uid 100000 here"; } && jvm_checks b
finish
