#!/bin/sh
# run-cli.sh: --help, --version, unknown commands and options.
. "$top_srcdir/tests/lib.sh"

run_mw 0 --help
expect_grep '^Usage:' out
expect_grep 'Exit status:' out
run_mw 0 --version
expect_grep '^memwatch [0-9]+\.[0-9]+' out
run_mw 2 frobnicate
expect_err_line "unknown command 'frobnicate'"
finish
