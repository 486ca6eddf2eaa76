# keepapp.py: a WSGI application for tests/run-python-gunicorn.sh, served by
# Debian's gunicorn. Its one view, remember, keeps what each request asked
# for in a module-level list, as a leaking service would: eight small dicts
# of figures and eight pairs per request, the kind of objects the interpreter
# recycles, so that they take the memory gunicorn's own temporaries of the
# same request (its parsing, Date header, logging) just dropped. The memory
# that grows is made in remember. Everything else a request makes (gunicorn's parsing, its
# Date header, its logging) is dropped by the end of the request.
REMEMBERED = []


def remember(environ):
    query = environ.get("QUERY_STRING", "")
    n = len(REMEMBERED)
    for k in range(8):
        REMEMBERED.append(({"n": n * 8 + k, "size": len(query) + n}, (n * 2 + k, -n)))
    return n


def app(environ, start_response):
    n = remember(environ)
    body = b"kept %d\n" % n
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
