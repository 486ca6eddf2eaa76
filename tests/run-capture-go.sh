#!/bin/sh
# run-capture-go.sh: a statically linked Go program (CGO_ENABLED=0) takes no
# agent: snap -p and -p say it is Go, with Go's own heap profiler as the
# hint; memwatch run starts it without the agent and exits with its own
# status; nothing is loaded into it. Built here, offline, with the go of
# Debian's golang-go.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/noagent-lib.sh"
need_ptrace
command -v go >/dev/null 2>&1 || skip "go is not installed (Debian package golang-go)"

mkdir -p src
cp "$top_srcdir/tests/targets/noagent_go.go" src/main.go
printf 'module noagent\n\ngo 1.13\n' >src/go.mod
(cd src && GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath" GOENV=off GOPROXY=off GOFLAGS= \
	GO111MODULE=on CGO_ENABLED=0 go build -o "$tmp/go_target" .) >build.log 2>&1 || {
	sed 's/^/  go build: /' build.log >&2
	skip "go cannot build a program here"
}
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
