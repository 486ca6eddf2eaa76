#!/bin/sh
# run-watch-metrics.sh: --metrics FILE in the Prometheus text format, read by
# the real consumers: Debian's prometheus-node-exporter serves the file with
# its textfile collector, a prometheus server on loopback scrapes it, and the
# test asks Prometheus's HTTP API for memwatch_rss_bytes of the target and
# checks it against /proc. Everything listens on 127.0.0.1 only and is stopped
# at the end.
. "$top_srcdir/tests/lib.sh"

exporter=$(command -v prometheus-node-exporter || true)
prom=$(command -v prometheus || true)
[ -n "$exporter" ] && [ -n "$prom" ] || skip "prometheus and prometheus-node-exporter are not installed (sh tests/install-deps.sh --tests)"
command -v curl >/dev/null 2>&1 || skip "curl is not installed"

mkdir textfile
"$TARGETS/flat" 24 60 &
t=$!
started_pids="$started_pids $t"
sleep 0.5

# the file while the watch runs, and its format
"$MEMWATCH" -p "$t" -i 200ms -d 40s -q --capture never --metrics textfile/memwatch.prom -o w.log \
	>out 2>err &
w=$!
started_pids="$started_pids $w"
wait_until "[ -s textfile/memwatch.prom ]" 10
expect_grep "^memwatch_rss_bytes\{pid=\"$t\",command=\"[^\"]*flat 24 60\"\} [0-9]+$" textfile/memwatch.prom
expect_grep "^memwatch_capture_state\{pid=\"$t\",command=\"[^\"]*\",state=\"off\"\} 1$" textfile/memwatch.prom
expect_grep '^# TYPE memwatch_snapshots_total counter$' textfile/memwatch.prom
ls textfile | grep -v '^memwatch\.prom$' | grep -q . && fail "a temporary file is left beside the metrics: $(ls textfile)"

# start_server NAME ARGS...: a server on a free loopback port ($port), up once
# its port answers; tries a few ports, never one tried before.
tries=0
start_server() {
	name=$1
	shift
	for try in 1 2 3 4 5; do
		tries=$((tries + 1))
		port=$((20000 + ($$ * 7 + tries * 131) % 30000))
		# a port something answers on already is not ours to take
		curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null && continue
		# exec: the background job is the server itself, so that the pid
		# killed at the end is the server's, not a shell's above it
		eval "exec $(printf '%s' "$*" | sed "s/@PORT@/$port/g")" > "$name.log" 2>&1 &
		server=$!
		started_pids="$started_pids $server"
		i=0
		while [ $i -lt 100 ] && kill -0 "$server" 2>/dev/null; do
			curl -fs -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null && return 0
			curl -s -o /dev/null "http://127.0.0.1:$port/metrics" 2>/dev/null && return 0
			sleep 0.1
			i=$((i + 1))
		done
		kill "$server" 2>/dev/null
	done
	sed 's/^/  | /' "$name.log" | tail -n 20 >&2
	return 1
}

start_server exporter "'$exporter' --collector.disable-defaults --collector.textfile \
	--collector.textfile.directory='$tmp/textfile' --web.listen-address=127.0.0.1:@PORT@" ||
	skip "prometheus-node-exporter does not start here"
eport=$port
curl -fs "http://127.0.0.1:$eport/metrics" > exported || fail "node_exporter serves no metrics"
expect_grep "^memwatch_rss_bytes\{command=\"[^\"]*flat 24 60\",pid=\"$t\"\} " exported
expect_grep '^node_textfile_scrape_error 0$' exported

cat > prom.yml <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: memwatch
    static_configs:
      - targets: ['127.0.0.1:$eport']
YML
start_server prometheus "'$prom' --config.file='$tmp/prom.yml' --storage.tsdb.path='$tmp/tsdb' \
	--web.listen-address=127.0.0.1:@PORT@" || skip "prometheus does not start here"
pport=$port

# ask Prometheus until it has scraped the figure (bounded: 30 s)
value=
i=0
while [ $i -lt 60 ] && [ -z "$value" ]; do
	curl -fsG "http://127.0.0.1:$pport/api/v1/query" \
		--data-urlencode "query=memwatch_rss_bytes{pid=\"$t\"}" > answer.json 2>/dev/null
	value=$(sed -n 's/.*"value":\[[0-9.]*,"\([0-9]*\)"\].*/\1/p' answer.json)
	[ -n "$value" ] || sleep 0.5
	i=$((i + 1))
done
[ -n "$value" ] || fail "Prometheus never had memwatch_rss_bytes for pid $t: $(cat answer.json 2>/dev/null)"
proc=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$t/status")
if [ -n "$value" ] && [ -n "$proc" ]; then
	# the target does not grow: the two agree within a few pages
	awk -v a="$value" -v b="$proc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 256 * 1024) }' ||
		fail "Prometheus says $value bytes, /proc says $proc"
fi

# the end of the watch leaves a file that reports no process
kill -INT "$w"
wait "$w"
st=$?
[ "$st" -eq 130 ] || fail "memwatch ended with status $st after SIGINT, expected 130"
expect_grep '^memwatch_processes 0$' textfile/memwatch.prom
expect_no_grep '^memwatch_rss_bytes' textfile/memwatch.prom

# a place the file cannot be written: one warning, the watch goes on
run_mw 0 -p "$t" -i 100ms -d 1s -q --capture never --metrics nodir/m.prom -o w2.log
expect_grep "^memwatch: warning: --metrics: " err
[ "$(grep -c 'metrics' err)" -eq 1 ] || fail "the metrics failure was said more than once"
expect_grep "^[0-9.]+ $t " w2.log
finish
