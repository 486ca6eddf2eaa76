#!/bin/sh
# run-capture-go.sh: a statically linked Go program (CGO_ENABLED=0) takes no
# agent: snap -p and -p say it is Go, with Go's own heap profiler as the
# hint; memwatch run starts it without the agent and exits with its own
# status; nothing is loaded into it. Built here, offline, with the go of
# Debian's golang-go.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/noagent-lib.sh"
need_ptrace
go_build "$top_srcdir/tests/targets/noagent_go.go" 0 "$tmp/go_target"
check_noagent go "$tmp/go_target" \
	'is a Go program \(statically linked\)' \
	'Go allocates from its own heap, which the agent does not see' \
	"use Go's heap profiler, runtime/pprof"
# started by the command, under --children
check_noagent_child go "$tmp/go_target" \
	'is a Go program \(statically linked\)' \
	'Go allocates from its own heap, which the agent does not see' \
	"use Go's heap profiler, runtime/pprof"
finish
