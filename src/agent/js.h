/* js.h: what the files of the agent's node runtime share (js.c, v8api.c):
 * the runtime (runtime.h) and its state. Private to those files. */
#ifndef MEMWATCH_AGENT_JS_H
#define MEMWATCH_AGENT_JS_H

#include "agent.h"

/* js.c: node's JavaScript heap: V8's sampling heap profiler driven from
 * inside the process (see js.c); uses heap.c. */
extern const struct mw_runtime mw_js_runtime MW_HIDDEN;
enum mw_js_state {
	MW_JS_NONE,          /* not node: no V8 API exported */
	MW_JS_UNSUPPORTED,   /* a V8 the agent does not read: native-only */
	MW_JS_OFF,           /* supported, profiler not running */
	MW_JS_WAITING,       /* start asked, the JavaScript thread not at a safe point yet */
	MW_JS_ON,            /* V8's sampling heap profiler running */
	MW_JS_GONE,          /* the isolate was torn down: native-only */
};

#endif
