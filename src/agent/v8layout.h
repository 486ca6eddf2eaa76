/* v8layout.h: what the agent reads of each V8 it reads (js.c), one table
 * entry per V8 major.minor, from that version's own headers
 * (v8-profiler.h, v8-local-handle.h, v8-internal.h, v8-primitive.h). A
 * V8 not in the table is captured native-only. tests/run-node-layout.sh
 * compiles against each version's headers and compares with this table
 * (through tests/tools/v8layout-dump). Standalone: no other file of the
 * agent is needed to link it. */
#ifndef MEMWATCH_V8LAYOUT_H
#define MEMWATCH_V8LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* How a JavaScript string is copied out. */
enum v8_strings {
	V8_WRITE_UTF8,          /* String::WriteUtf8 (int length, options) */
	V8_WRITE_UTF8_V2,       /* String::WriteUtf8V2 (size_t capacity, flags) */
};

/* How a v8::HandleScope is opened and closed. */
enum v8_scope {
	V8_SCOPE_CALLED,        /* its exported constructor and destructor */
	V8_SCOPE_INLINE,        /* inline in the headers: the isolate's
				 * HandleScopeData at hs_data, moved by the
				 * agent as the headers' inline code does */
};

/* Offsets and sizes in bytes. v8::AllocationProfile's Node, Allocation and
 * Sample as laid out by the Itanium C++ ABI, their std::vectors libstdc++'s
 * (begin, end, capacity: 24 bytes); its virtual functions GetRootNode (slot
 * 0), GetSamples (slot 1), then the complete and the deleting destructor
 * (slots 2 and 3). */
struct v8_layout {
	const char *version;            /* "12.4": V8's major.minor */
	uint16_t node_name, node_script_name, node_line, node_column, node_id;
	uint16_t node_children, node_allocations;
	uint16_t alloc_size, alloc_bytes, alloc_count;
	uint16_t sample_size, sample_node_id;
	uint16_t hs_size;               /* sizeof(v8::HandleScope) */
	uint8_t strings;                /* enum v8_strings */
	uint8_t scope;                  /* enum v8_scope */
	uint16_t hs_data;               /* V8_SCOPE_INLINE: Internals::kIsolateHandleScopeDataOffset */
};

/* The slots of v8::AllocationProfile's virtual functions the agent calls. */
#define V8_VT_ROOT 0            /* GetRootNode */
#define V8_VT_SAMPLES 1         /* GetSamples */
#define V8_VT_DELETE 3          /* the deleting destructor */

/* A v8::HandleScope's data in its isolate (v8::internal::HandleScopeData),
 * where V8_SCOPE_INLINE moves it. */
struct v8_hs_data { void **next, **limit; int level, sealed_level; };

/* The room js.c gives a v8::HandleScope; a V8 whose is larger is not read. */
#define V8_HS_ROOM 64

extern const struct v8_layout mw_v8_layouts[];
extern const size_t mw_v8_nlayouts;

/* The entry of the V8 whose version string (v8::V8::GetVersion: "13.6.233.17-node.53")
 * is version, or NULL. */
const struct v8_layout *mw_v8_layout(const char *version);

/* The versions in the table, "10.2, 11.3, ...", in buf. */
void mw_v8_versions(char *buf, size_t len);

#endif
