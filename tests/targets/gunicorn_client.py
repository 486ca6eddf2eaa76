# gunicorn_client.py: a bounded client for tests/run-python-gunicorn.sh. PORT
# MAX_REQUESTS SECONDS STOPFILE: GET requests to 127.0.0.1:PORT only, each
# with a query of 24 short parameters, one after another on one connection
# each, until MAX_REQUESTS were made, SECONDS passed or STOPFILE exists.
# Prints "requests N errors E" and exits 0 (1 when most requests failed).
import http.client
import os
import sys
import time

port, limit, seconds, stop = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
end = time.monotonic() + seconds
done = errors = 0
while done < limit and time.monotonic() < end:
    if done % 200 == 0 and os.path.exists(stop):
        break
    query = "&".join("p%d=v%d-%d" % (k, done, k) for k in range(24))
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/keep?" + query)
        c.getresponse().read()
        c.close()
    except OSError:
        errors += 1
        time.sleep(0.01)
    done += 1
print("requests %d errors %d" % (done, errors), flush=True)
sys.exit(1 if errors > done // 2 else 0)
