#!/bin/sh
# run-node18-serve.sh: run-node-serve.sh on Debian's node 18 (V8 10.2), which
# tests/install-deps.sh --tests unpacks into /opt/memwatch-tests/node18;
# skipped when it is not there.
node_under_test=18
. "$top_srcdir/tests/run-node-serve.sh"
