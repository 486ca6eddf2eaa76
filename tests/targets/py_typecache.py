# py_typecache.py: attribute names made afresh at every call, for
# tests/run-python-typecache.sh. STOPFILE; prints "ready" after a first
# round, then calls the standard library's email.utils.formatdate (whose
# datetime.timetuple() makes the names "time" and "struct_time" anew at each
# call, in _PyImport_GetModuleAttrString) and looks up attributes by names
# built at each call (getattr on an instance), each result checked, until
# STOPFILE exists or 120 s have passed; then prints "ok N" and exits 0.
# Nothing is kept: the process's heap stays flat.
import email.utils
import os
import sys
import time

stop = sys.argv[1]


class Box:
    pass


box = Box()
for k in range(8):
    setattr(box, "field%d" % k, k)
EPOCH = "Thu, 01 Jan 1970 00:00:00 GMT"


def one_round(n):
    for i in range(n):
        if email.utils.formatdate(0, usegmt=True) != EPOCH:
            raise SystemExit("formatdate gave a wrong date")
        if getattr(box, "field%d" % (i & 7)) != i & 7:
            raise SystemExit("getattr gave a wrong value")


one_round(1000)
print("ready", flush=True)
end = time.monotonic() + 120
n = 0
while not os.path.exists(stop) and time.monotonic() < end:
    one_round(1000)
    n += 1000
print("ok", n, flush=True)
