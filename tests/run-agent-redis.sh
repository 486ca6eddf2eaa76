#!/bin/sh
# run-agent-redis.sh: Debian's own redis-server (stripped, PIE, its memory from
# libjemalloc through zmalloc), a program nobody here wrote, watched the way a
# user would: memwatch -p on the running server, a client storing values of a
# known size, the growth report at the end. 80 000 values of 1 000 bytes go in
# after the capture starts (jemalloc serves each from its 1 KiB class): the
# top row must be that growth, allocated by zmalloc for an sds string, and
# the server must answer afterwards with every key in place.
. "$top_srcdir/tests/lib.sh"

REDIS=/usr/bin/redis-server
CLI=/usr/bin/redis-cli
[ -x "$REDIS" ] || skip "$REDIS is not installed (Debian package redis-server)"
[ -x "$CLI" ] || skip "$CLI is not installed (Debian package redis-tools)"
need_ptrace
MIB=1048576

sock=$tmp/r.sock
"$REDIS" --port 0 --unixsocket "$sock" --save '' --appendonly no --daemonize no \
	--dir "$tmp" >redis.out 2>&1 &
rp=$!
started_pids="$started_pids $rp"

# store BATCH ROUNDS: ROUNDS x 2 000 new keys with 1 000-byte values.
store() {
	local r
	for r in $(seq 1 "$2"); do
		"$CLI" -s "$sock" eval "for i = 1, 2000 do redis.call('set', ARGV[1] .. ':' .. i, string.rep('x', 1000)) end return 1" \
			0 "$1.$r" >/dev/null || { fail "redis-cli eval (batch $1, round $r): status $?"; return 1; }
	done
}

wait_until "[ \"\$('$CLI' -s '$sock' ping 2>/dev/null)\" = PONG ]" 30 || { cat redis.out >&2; finish; }

"$MEMWATCH" -p "$rp" -i 200ms -t +16MiB -d 120s -q -o r.log >w.out 2>w.err &
mw=$!
started_pids="$started_pids $mw"
wait_until "grep -q '^# event .* start' r.log 2>/dev/null" 30
# 40 000 keys: past the trigger; the capture starts.
store a 20 && wait_until "grep -q '^# event .* $rp capture-start' r.log" 30
# the growth the capture must see: 80 000 keys (about 78 MiB in 1 KiB blocks)
store b 40 && wait_until "[ \$(grep -c '^# event .* $rp snapshot ' r.log) -ge 2 ]" 30
kill -INT "$mw"
wait "$mw"
st=$?
# Ended by Ctrl-C: status 130, after the final snapshot and the report.
[ "$st" -eq 130 ] || { fail "memwatch -p $rp: status $st, expected 130"; sed 's/^/  | /' w.err >&2; }
expect_grep "^# event .* $rp attach .*reused=0" r.log
expect_grep "^# event .* $rp snapshot path=r\.$rp\.[0-9]+-final\.snap" r.log

# The report's first row: its growth in MiB, its head (the last field of
# the row's line) and the frames under it.
awk '$1 == "1" && $2 ~ /^\+/ { row = 1; print "growth", $2, $3; print "frame", $(NF - 1); next }
     row && /^                    / && NF { print "frame", $1; next } { row = 0 }' w.out >top
expect_grep '^frame zmalloc' top
expect_grep '^frame _sdsnewlen$' top
expect_grep '^frame createStringObject$' top
if grep -q '^growth [+][0-9.]* MiB$' top; then
	mib=$(sed -n 's/^growth +\([0-9]*\)[.0-9]* MiB$/\1/p' top)
	[ "$mib" -ge 60 ] && [ "$mib" -le 130 ] ||
		fail "top row grew $mib MiB, expected 60..130 (80 000 x 1 KiB, and what of the first 40 000 came after the trigger)"
else
	fail "the report has no first row in MiB:"
	sed 's/^/  | /' w.out >&2
fi
expect_grep 'sampled stacks explain [0-9]+ % of the RSS growth' w.out
# named as the user started it (redis-server is a link to redis-check-rdb)
expect_grep "^before .*: pid $rp redis-server, " w.out

# The server is unharmed: it answers, with every key.
n=$("$CLI" -s "$sock" dbsize) || fail "redis-cli dbsize after the capture: status $?"
[ "$n" = 120000 ] || fail "redis has $n keys after the capture, expected 120000"
"$CLI" -s "$sock" shutdown nosave >/dev/null 2>&1
wait "$rp"
finish
