#!/bin/sh
# run-capture-static.sh: a statically linked C program (gcc -static) takes no
# agent: snap -p and -p say so with the hint, memwatch run starts it without
# the agent, watches it and exits with its own status; nothing is loaded.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/noagent-lib.sh"
need_ptrace

check_noagent static "$TARGETS/noagent_static" \
	'is statically linked \(it has no ELF interpreter\)' 'no library can be loaded into it' \
	"link it dynamically, or use its allocator's own profiler"
# started by the command, under --children
check_noagent_child static "$TARGETS/noagent_static" \
	'is statically linked \(it has no ELF interpreter\)' 'no library can be loaded into it' \
	"link it dynamically, or use its allocator's own profiler"
finish
