# py_wsgi.py: a WSGI application for gunicorn whose view keeps 400 KiB of
# every request's data in a list it never empties.
kept = []


def keep(n):
    kept.append(bytearray(n))


def app(environ, start_response):
    for _ in range(100):
        keep(4096)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok\n"]
