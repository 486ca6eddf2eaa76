#!/bin/sh
# run-python-lifecycle-old.sh: run-python-lifecycle.sh's life of a capture on
# pyenv's CPython 3.8, 3.9 and 3.10 (a missing one is said and skipped).
# Apart from the other CPythons' so that the parts run side by side.
# limit: 900
lifecycle_part=old
. "$top_srcdir/tests/run-python-lifecycle.sh"
