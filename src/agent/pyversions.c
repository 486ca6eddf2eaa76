/* pyversions.c: CPython from 3.13 on, read through the table the interpreter
 * publishes for debuggers (_Py_DebugOffsets, at the start of _PyRuntime):
 * where that table holds each offset the agent reads, and what it does not
 * publish, come from the version's entry in pyversions.h. */
#include "config.h"

#include <string.h>

#include "agent.h"
#include "python.h"
#define MW_PYVERSIONS_TABLE 1
#include "pyversions.h"

struct mw_py_do mw_py_do;
const char *mw_py_do_refused;

#define DO_COOKIE "xdebugpy"
#define DO_VERSION 8                 /* _Py_DebugOffsets.version: Py_Version of the build it describes */
#define DO_FREE_THREADED 16          /* .free_threaded */
#define DO_MAX_OFFSET 65536          /* an offset read inside a structure of sane size */

const struct mw_pyver *mw_pyver_of(unsigned minor)
{
	for (size_t i = 0; i < sizeof mw_pyvers / sizeof mw_pyvers[0]; i++)
		if (mw_pyvers[i].minor == minor)
			return &mw_pyvers[i];
	return NULL;
}

/* One offset from the table at runtime, at position at; false when it is
 * past a sane size. */
static bool do_read(const char *runtime, uint16_t at, size_t *out)
{
	uint64_t v;
	memcpy(&v, runtime + at, sizeof v);
	*out = (size_t)v;
	return v < DO_MAX_OFFSET;
}

bool mw_py_debug_offsets(const char *runtime)
{
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;
	const struct mw_pyver *v = mw_pyver_of(minor);
	struct mw_py_do d;
	uint64_t w;

	memset(&mw_py_do, 0, sizeof mw_py_do);
	mw_py_do_refused = NULL;
	if (!v || (mw_py.version >> 24) != 3)
		return false;
	/* the table must say it describes this very build: the same version,
	 * with the GIL (a free-threaded build lays its objects out otherwise) */
	mw_py_do_refused = "its _Py_DebugOffsets is not this build's";
	if (!runtime || memcmp(runtime, DO_COOKIE, 8) != 0)
		return false;
	memcpy(&w, runtime + DO_VERSION, sizeof w);
	if (w != mw_py.version)
		return false;
	memcpy(&w, runtime + DO_FREE_THREADED, sizeof w);
	mw_py_do_refused = "a free-threaded build";
	if (w != 0)
		return false;
	mw_py_do_refused = "its _Py_DebugOffsets holds offsets out of place";
	memset(&d, 0, sizeof d);
	d.v = v;
	if (!do_read(runtime, v->do_interp_gc, &d.interp_gc) ||
	    !do_read(runtime, v->do_ts_current_frame, &d.ts_current_frame) ||
	    !do_read(runtime, v->do_frame_previous, &d.frame_previous) ||
	    !do_read(runtime, v->do_frame_executable, &d.frame_executable) ||
	    !do_read(runtime, v->do_frame_instr_ptr, &d.frame_instr_ptr) ||
	    !do_read(runtime, v->do_frame_localsplus, &d.frame_localsplus) ||
	    !do_read(runtime, v->do_frame_owner, &d.frame_owner) ||
	    !do_read(runtime, v->do_code_filename, &d.code_filename) ||
	    !do_read(runtime, v->do_code_qualname, &d.code_qualname) ||
	    !do_read(runtime, v->do_code_adaptive, &d.code_adaptive) ||
	    !do_read(runtime, v->do_dict_keys, &d.dict_keys) ||
	    !do_read(runtime, v->do_dict_values, &d.dict_values) ||
	    !do_read(runtime, v->do_str_state, &d.str_state) ||
	    !do_read(runtime, v->do_str_length, &d.str_length) ||
	    !do_read(runtime, v->do_str_ascii_size, &d.str_ascii_size))
		return false;
	/* where a structure's offsets are known to lie in order, they must:
	 * a table read at the wrong positions gives numbers out of order */
	if (d.frame_previous == d.frame_executable || d.frame_instr_ptr <= d.frame_executable ||
	    d.frame_localsplus <= d.frame_owner || d.str_ascii_size <= d.str_state ||
	    d.str_ascii_size <= d.str_length || d.dict_values != d.dict_keys + sizeof(void *) ||
	    d.code_qualname <= d.code_filename || d.code_adaptive <= d.code_qualname)
		return false;
	mw_py_do = d;
	mw_py_do_refused = NULL;
	return true;
}
