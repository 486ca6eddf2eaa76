#!/bin/sh
# run-python-lifecycle-sid.sh: run-python-lifecycle.sh's life of a capture on
# the CPythons of the Debian sid root (3.14 and 3.15, release builds), which
# tests/install-deps.sh --tests makes; skipped when it is not there. Apart
# from the other CPythons' so that the two halves run side by side.
# limit: 900
lifecycle_part=sid
. "$top_srcdir/tests/run-python-lifecycle.sh"
