#!/bin/sh
# run-python-types-sid.sh: run-python-types.sh's objects by type on the
# CPythons of the Debian sid root (3.14 and 3.15, release and debug builds,
# and a program linked with libpython3.14.so), which tests/install-deps.sh
# --tests makes; skipped when it is not there. Apart from the other CPythons'
# so that the two halves run side by side.
# limit: 600
types_part=sid
. "$top_srcdir/tests/run-python-types.sh"
