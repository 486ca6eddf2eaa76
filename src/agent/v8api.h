/* v8api.h: V8's and node's C++ API as js.c calls it (v8api.c): the
 * functions found by their mangled names, never linked against, and what
 * differs between the V8 versions of v8layout.c's table: opening a handle
 * scope, copying a string out, the offsets v8::AllocationProfile is read at. */
#ifndef MEMWATCH_V8API_H
#define MEMWATCH_V8API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "js.h"
#include "v8layout.h"

struct v8_api {
	const char *(*version)(void);
	void *(*try_get_current)(void);
	void (*request_interrupt)(void *iso, void (*cb)(void *iso, void *data), void *data);
	void *(*heap_profiler)(void *iso);
	bool (*start)(void *hp, uint64_t interval, int depth, int flags);
	void (*stop)(void *hp);
	void *(*profile)(void *hp);
	void (*hs_init)(void *hs, void *iso);
	void (*hs_fini)(void *hs);
	int (*write_utf8)(const void *str, void *iso, char *buf, int len, int *nchars, int opts);
	size_t (*write_utf8_v2)(const void *str, void *iso, char *buf, size_t cap, int flags, size_t *nchars);
	void (*hs_delete_ext)(void *hs, void *iso);
	bool (*in_context)(void *iso);
	void *(*current_context)(void *iso);
	void *(*node_env)(void *context);
	void (*add_cleanup)(void *iso, void (*fn)(void *), void *arg);
	const bool *v8_initialized;
	void (*node_interrupt)(void *env, void (*fn)(void *), void *arg);
};
/* Set by mw_v8_probe: the functions (those the running V8's entry calls are
 * all there when it says MW_JS_OFF), and that entry. */
extern struct v8_api mw_v8 MW_HIDDEN;
extern const struct v8_layout *mw_v8_lay MW_HIDDEN;

/* libstdc++'s std::vector; the signatures of v8::AllocationProfile's
 * virtual functions (slots in v8layout.h); a field of type at offset off. */
struct std_vector { const char *begin, *end, *cap; };
typedef void *v8_root_fn(void *self);
typedef const struct std_vector *v8_samples_fn(void *self);
typedef void v8_delete_fn(void *self);
#define V8_AT(p, off, type) (*(type const *)((const char *)(p) + (off)))

/* Look for V8's and node's functions in the process and V8's version: enum
 * mw_js_state's MW_JS_NONE (no V8), MW_JS_UNSUPPORTED (why says why) or
 * MW_JS_OFF (it can be read). version gets V8's version string. */
int mw_v8_probe(char *version, size_t vlen, char *why, size_t wlen) MW_HIDDEN;

/* Open a v8::HandleScope in hs (V8_HS_ROOM bytes, 16-aligned) on iso, on its
 * thread, as its constructor does. False, nothing done, when the data of an
 * inline one does not look like a handle scope's. */
bool mw_v8_scope_open(void *hs, void *iso) MW_HIDDEN;
/* Close the scope mw_v8_scope_open opened in hs, as its destructor does. */
void mw_v8_scope_close(void *hs) MW_HIDDEN;

/* A copy (caller frees; NULL without memory) of the v8::Local<v8::String>
 * local, in UTF-8, without a "file://" in front; empty's when it is empty. */
char *mw_v8_string(void *iso, void *local, const char *empty) MW_HIDDEN;

#endif
