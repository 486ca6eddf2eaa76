/* v8api.c: V8's and node's C++ API, found by the Itanium-mangled names of
 * its exported functions (dlsym), and what the agent does differently from
 * one V8 version to another, from that version's entry in v8layout.c: which
 * functions it needs, how a v8::HandleScope is opened and closed (called, or
 * moved in the isolate as the headers' inline code does), which function
 * copies a string out. js.c drives V8's profiler with it. */
#include "config.h"

#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v8api.h"

MW_HIDDEN struct v8_api mw_v8;
MW_HIDDEN const struct v8_layout *mw_v8_lay;

static const struct { const char *name; size_t off; } v8_syms[] = {
#define S(f, n) { n, offsetof(struct v8_api, f) }
	S(version, "_ZN2v82V810GetVersionEv"),
	S(try_get_current, "_ZN2v87Isolate13TryGetCurrentEv"),
	S(request_interrupt, "_ZN2v87Isolate16RequestInterruptEPFvPS0_PvES2_"),
	S(heap_profiler, "_ZN2v87Isolate15GetHeapProfilerEv"),
	S(start, "_ZN2v812HeapProfiler25StartSamplingHeapProfilerEmiNS0_13SamplingFlagsE"),
	S(stop, "_ZN2v812HeapProfiler24StopSamplingHeapProfilerEv"),
	S(profile, "_ZN2v812HeapProfiler20GetAllocationProfileEv"),
	S(hs_init, "_ZN2v811HandleScopeC1EPNS_7IsolateE"),
	S(hs_fini, "_ZN2v811HandleScopeD1Ev"),
	S(write_utf8, "_ZNK2v86String9WriteUtf8EPNS_7IsolateEPciPii"),
	S(write_utf8_v2, "_ZNK2v86String11WriteUtf8V2EPNS_7IsolateEPcmiPm"),
	S(hs_delete_ext, "_ZN2v811HandleScope16DeleteExtensionsEPNS_7IsolateE"),
	S(in_context, "_ZN2v87Isolate9InContextEv"),
	S(current_context, "_ZN2v87Isolate17GetCurrentContextEv"),
	S(node_env, "_ZN4node21GetCurrentEnvironmentEN2v85LocalINS0_7ContextEEE"),
	S(add_cleanup, "_ZN4node25AddEnvironmentCleanupHookEPN2v87IsolateEPFvPvES3_"),
	S(v8_initialized, "_ZN4node11per_process14v8_initializedE"),
	S(node_interrupt, "_ZN4node16RequestInterruptEPNS_11EnvironmentEPFvPvES2_"),
#undef S
};

/* Is the function at offset off of struct v8_api one the running V8's
 * entry calls? */
static bool needed(size_t off)
{
	if (off == offsetof(struct v8_api, write_utf8))
		return mw_v8_lay->strings == V8_WRITE_UTF8;
	if (off == offsetof(struct v8_api, write_utf8_v2))
		return mw_v8_lay->strings == V8_WRITE_UTF8_V2;
	if (off == offsetof(struct v8_api, hs_init) || off == offsetof(struct v8_api, hs_fini))
		return mw_v8_lay->scope == V8_SCOPE_CALLED;
	if (off == offsetof(struct v8_api, hs_delete_ext))
		return mw_v8_lay->scope == V8_SCOPE_INLINE;
	return true;
}

int mw_v8_probe(char *version, size_t vlen, char *why, size_t wlen)
{
	const char *v, *t;
	size_t i;
	mw_loader_enter();
	for (i = 0; i < sizeof v8_syms / sizeof v8_syms[0]; i++) {
		void *p = dlsym(RTLD_DEFAULT, v8_syms[i].name);
		memcpy((char *)&mw_v8 + v8_syms[i].off, &p, sizeof p);
	}
	mw_loader_leave();
	if (!mw_v8.version)
		return MW_JS_NONE;
	v = mw_v8.version();
	snprintf(version, vlen, "%s", v ? v : "?");
	if (!(mw_v8_lay = mw_v8_layout(version)) || mw_v8_lay->hs_size > V8_HS_ROOM) {
		char known[48];
		mw_v8_versions(known, sizeof known);
		snprintf(why, wlen, "V8 %s is not a version memwatch reads (%s)", version, known);
		return MW_JS_UNSUPPORTED;
	}
	if ((t = getenv("MEMWATCH_TEST_V8_LAYOUT")) && !strcmp(t, "fail")) {
		snprintf(why, wlen, "V8 %s is not laid out as its headers say", version);
		return MW_JS_UNSUPPORTED;
	}
	for (i = 0; i < sizeof v8_syms / sizeof v8_syms[0]; i++) {
		void *p;
		memcpy(&p, (char *)&mw_v8 + v8_syms[i].off, sizeof p);
		if (!p && needed(v8_syms[i].off)) {
			snprintf(why, wlen, "V8 %s does not export %s", version, v8_syms[i].name);
			return MW_JS_UNSUPPORTED;
		}
	}
	return MW_JS_OFF;
}

/* A scope opened inline (V8_SCOPE_INLINE), as v8-local-handle.h lays it out. */
struct hs_inline { void *iso; void **prev_next, **prev_limit; };

bool mw_v8_scope_open(void *hs, void *iso)
{
	struct hs_inline *h = hs;
	struct v8_hs_data *d;
	if (mw_v8_lay->scope == V8_SCOPE_CALLED) {
		mw_v8.hs_init(hs, iso);
		return true;
	}
	d = (struct v8_hs_data *)((char *)iso + mw_v8_lay->hs_data);
	if (d->level < 0 || d->level > 1 << 20 || d->sealed_level < 0 || d->sealed_level > d->level ||
	    !d->next != !d->limit || d->next > d->limit)
		return false;
	h->iso = iso;
	h->prev_next = d->next;
	h->prev_limit = d->limit;
	d->level++;
	return true;
}

void mw_v8_scope_close(void *hs)
{
	struct hs_inline *h = hs;
	struct v8_hs_data *d;
	if (mw_v8_lay->scope == V8_SCOPE_CALLED) {
		mw_v8.hs_fini(hs);
		return;
	}
	d = (struct v8_hs_data *)((char *)h->iso + mw_v8_lay->hs_data);
	d->next = h->prev_next;
	d->level--;
	if (d->limit != h->prev_limit) {
		d->limit = h->prev_limit;
		mw_v8.hs_delete_ext(hs, h->iso);
	}
}

char *mw_v8_string(void *iso, void *local, const char *empty)
{
	char buf[1024];
	int n;
	if (!local)
		return strdup(empty);
	/* without a terminating NUL, orphan surrogates replaced */
	if (mw_v8_lay->strings == V8_WRITE_UTF8_V2)
		n = (int)mw_v8.write_utf8_v2(local, iso, buf, sizeof buf - 1, 2, NULL);
	else
		n = mw_v8.write_utf8(local, iso, buf, (int)sizeof buf - 1, NULL, 2 | 8);
	if (n < 0 || n >= (int)sizeof buf)
		n = 0;
	buf[n] = 0;
	if (!buf[0])
		return strdup(empty);
	return strdup(!strncmp(buf, "file://", 7) ? buf + 7 : buf);
}
