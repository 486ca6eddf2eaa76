#!/bin/sh
# run-capture-jvm.sh: a HotSpot JVM (Debian's OpenJDK) leaking native memory
# through java.util.zip.Inflater objects never end()ed. memwatch asks the JVM
# for its perf map itself before each snapshot (HotSpot's attach socket, as
# jcmd does), so the report names the Inflater's compiled Java methods, with no
# map made beforehand; the JVM goes on running. A JVM started with
# -XX:+DisableAttachMechanism is told about in one line with the jcmd command,
# is sent no SIGQUIT, and is watched with native names (also when the option
# comes from JAVA_TOOL_OPTIONS). Under memwatch run the report at exit names
# them from the map written for the last snapshot. A program that maps a
# libjvm.so but does not catch SIGQUIT is sent none.
. "$top_srcdir/tests/lib.sh"

need_ptrace
[ -f "$MEMWATCH_AGENT" ] || skip "the agent is not built ($MEMWATCH_AGENT)"
unset DEBUGINFOD_URLS
need_jdk
"$jdk/bin/javac" -d . "$top_srcdir/tests/targets/InflaterLeak.java" >javac.out 2>&1 ||
	{ fail "javac InflaterLeak.java: $(cat javac.out)"; finish; }

# jvm_start NAME JAVA-OPTIONS...: InflaterLeak as the fifo target NAME, until
# it says "ready 0 PID", then leaking (ready 1); $j. Its perf map and attach
# files are gone when it ends (the test's cleanup kills it otherwise).
jvm_start() {
	local name=$1
	shift
	start_fifo_target "$name" "$jdk/bin/java" -Xmx64m "$@" -cp . InflaterLeak
	j=$target_pid
	wait_ready "$name" "0 $j" 30 || return 1
	# no map but the one memwatch asks for
	rm -f "/tmp/perf-$j.map"
	step "$name" && wait_ready "$name" 1
}

# jvm_end NAME: the JVM still answers: it stops leaking, says ok and exits 0,
# having printed no thread dump (what a SIGQUIT does that the JVM does not
# take as an attach trigger); memwatch left no trigger file behind.
jvm_end() {
	grep -Eq '^State:[[:space:]]+[RSD]' "/proc/$j/status" || fail "$1: the JVM is gone after memwatch"
	step "$1"
	expect_target_exit "$j" "$1"
	expect_no_grep 'Full thread dump' "$1.out"
	[ ! -e ".attach_pid$j" ] && [ ! -e "/tmp/.attach_pid$j" ] ||
		fail "$1: memwatch left the attach trigger .attach_pid$j"
	rm -f "/tmp/perf-$j.map"
}

# 1. Watched with -p: the growth is the Inflaters', named from the map the
# watch had the JVM write at its snapshots.
if jvm_start a; then
	run_mw 0 -p "$j" -i 200ms -d 10s -q --trigger +8MiB -o w.log
	cp out w.report
	expect_grep "^# event [0-9.]+ $j jvm-perfmap ms=[0-9.]+ signalled=1$" w.log
	expect_no_grep 'jvm-perfmap-failed' w.log
	[ -s "/tmp/perf-$j.map" ] || fail "the JVM wrote no /tmp/perf-$j.map"
	# the top row: an Inflater method, compiled (an address in no module)
	expect_grep '^ +1 +\+[0-9.]+ [KM]iB .*  [a-z]+ java\.util\.zip\.Inflater\.[a-z<>]+\(.*\)  \(0x[0-9a-f]+\)' w.report
	expect_no_grep 'not named' err
	# and a snapshot on demand, from a map written again for it
	rm -f "/tmp/perf-$j.map"
	run_mw 0 snap -p "$j" -w 2 -o s.snap
	expect_no_grep 'not named' err
	[ -s "/tmp/perf-$j.map" ] || fail "snap: the JVM wrote no /tmp/perf-$j.map"
	# (a row: the JVM may have mapped a region of its own heap meanwhile)
	run_mw 0 show s.snap
	expect_grep '^ +[0-9]+ +[0-9.]+ [KM]iB .*  [a-z]+ java\.util\.zip\.Inflater\.[a-z<>]+\(.*\)  \(0x[0-9a-f]+\)' out
	jvm_end a
fi

# 2. Under memwatch run: the report at its exit (what was never freed) names
# them too, from the map written for the snapshot before, read once the JVM
# is gone (a method compiled after that snapshot is not named).
rm -f r.log
start_fifo_target r timeout -k 5 90 "$MEMWATCH" run -q --trigger +16MiB -o r.log -- \
	"$jdk/bin/java" -Xmx64m -cp . InflaterLeak
mw=$target_pid
if wait_ready r "0 [0-9]*"; then
	j=$(awk '$1 == "ready" && $2 == 0 { print $3 }' r.out)
	rm -f "/tmp/perf-$j.map"
	if step r && wait_ready r 1 &&
		wait_until "grep -q ' $j jvm-perfmap .*' r.log && grep -q ' $j snapshot ' r.log" 40; then
		step r
	fi
	wait "$mw"
	st=$?
	end_target r
	[ "$st" -eq 0 ] || fail "memwatch run -- java exited $st"
	expect_grep '^ok [0-9]+$' r.out
	expect_grep "^# event [0-9.]+ $j snapshot path=.*-exit\.snap " r.log
	# the exit report names them (its rows of heap blocks: the JVM's own
	# reservations of hundreds of MiB can fill the printed top rows when
	# the capture was short)
	expect_grep 'never freed at exit' r.out
	xsnap=$(sed -n "s/^# event [0-9.]* $j snapshot path=\([^ ]*-exit\.snap\) .*/\1/p" r.log)
	run_mw 0 show --kind malloc "$xsnap"
	expect_grep '^ +[0-9]+ +[0-9.]+ [KM]iB .*  [a-z]+ java\.util\.zip\.Inflater\.[a-z<>]+\(.*\)  \(0x[0-9a-f]+\)' out
	rm -f "/tmp/perf-$j.map"
fi

# 3. A JVM that refuses attach: one line with the jcmd command, at the first
# of its snapshots only; native frames are named still.
if jvm_start b -XX:+DisableAttachMechanism; then
	run_mw 0 -p "$j" -i 200ms -d 8s -q --trigger +8MiB --snap-every +4MiB -o d.log
	cp err d.err
	expect_err_line "pid $j: Java methods are not named: the JVM was started with -XX:\+DisableAttachMechanism, which \`jcmd $j Compiler\.perfmap\` needs too"
	expect_grep "^# event [0-9.]+ $j jvm-perfmap-failed cause=" d.log
	expect_grep "^# event [0-9.]+ $j snapshot path=.*\.([3-9]|[1-9][0-9])(-final)?\.snap" d.log
	[ ! -e "/tmp/.java_pid$j" ] || fail "the JVM that refuses attach has an attach socket"
	[ ! -e "/tmp/perf-$j.map" ] || fail "the JVM that refuses attach wrote a perf map"
	run_mw 0 show --all-frames d.*-final.snap
	expect_grep 'Java_java_util_zip_Inflater_init  ' out
	expect_no_grep 'java\.util\.zip\.Inflater\.' out
	jvm_end b
fi

# 4. The same option from JAVA_TOOL_OPTIONS, for a snapshot on demand.
JAVA_TOOL_OPTIONS=-XX:+DisableAttachMechanism
export JAVA_TOOL_OPTIONS
jvm_start c
started=$?
unset JAVA_TOOL_OPTIONS
if [ "$started" -eq 0 ]; then
	run_mw 0 snap -p "$j" -w 1 -o c.snap
	expect_grep "^memwatch: pid $j: Java methods are not named: the JVM was started with -XX:\+DisableAttachMechanism" err
	[ "$(grep -c 'not named' err)" -eq 1 ] || fail "snap: not one line about the names"
	[ ! -e "/tmp/.java_pid$j" ] || fail "the JVM that refuses attach has an attach socket"
	jvm_end c
fi

# 5. Not a JVM: a program that maps a file named libjvm.so but does not catch
# SIGQUIT (which would end it) is sent none.
for z in /lib/*/libz.so.1 /usr/lib/*/libz.so.1 /usr/lib64/libz.so.1; do
	[ -f "$z" ] && break
done
if [ -f "$z" ]; then
	mkdir fake && cp "$z" fake/libjvm.so
	# a background job of a script ignores SIGQUIT: as a program started
	# otherwise, this one does not, and would end at one
	LD_PRELOAD=$tmp/fake/libjvm.so start_target env --default-signal=QUIT \
		"$TARGETS/demo" 60 >demo.out
	wait_libc "$target_pid"
	wait_until "grep -q '/libjvm\.so$' /proc/$target_pid/maps" 10
	ign=$(awk '$1 == "SigIgn:" { print substr($2, length($2)) }' "/proc/$target_pid/status")
	case $ign in [4567cdefCDEF]) fail "the false JVM ignores SIGQUIT: the case proves nothing" ;; esac
	run_mw 0 snap -p "$target_pid" -w 1 -o f.snap
	expect_grep "^memwatch: pid $target_pid: Java methods are not named: the JVM does not catch SIGQUIT" err
	# (a child of ours that died stays a zombie: kill -0 would not tell)
	grep -Eq '^State:[[:space:]]+[RSD]' "/proc/$target_pid/status" ||
		fail "a program mapping libjvm.so died at memwatch snap"
	[ ! -e "/tmp/.attach_pid$target_pid" ] && [ ! -e ".attach_pid$target_pid" ] ||
		fail "memwatch left an attach trigger for a program that is no JVM"
	kill "$target_pid"
	wait "$target_pid" 2>/dev/null
else
	echo "no libz.so.1 found: the case of a false libjvm.so is skipped" >&2
fi
finish
