/* pyversions.h: what the agent reads of each CPython from 3.13 on, one entry
 * per minor version. Where the interpreter's own table for debuggers
 * (_Py_DebugOffsets, the first member of _PyRuntime) holds each offset the
 * agent reads: the layout of that table changes with the version (3.14
 * inserted fields inside its sub-structures), so one fixed layout would read
 * wrong offsets. And what that table does not publish, mirrored from the
 * version's internal headers. x86_64, GIL builds, release and Py_DEBUG alike.
 * The table (MW_PYVERSIONS_TABLE defined) is included by pyversions.c, by
 * the CLI for its messages, and by the program tests/run-python-offsets.sh
 * compiles against each version's headers to check its entry: a new version
 * is a new entry here, checked there. */
#ifndef MEMWATCH_AGENT_PYVERSIONS_H
#define MEMWATCH_AGENT_PYVERSIONS_H

#include <stdint.h>

struct mw_pyver {
	unsigned minor;
	/* positions in _Py_DebugOffsets: of the values read */
	uint16_t do_interp_gc;          /* interpreter_state.gc */
	uint16_t do_ts_current_frame;   /* thread_state.current_frame */
	uint16_t do_frame_previous;     /* interpreter_frame.previous */
	uint16_t do_frame_executable;   /* .executable (the code object) */
	uint16_t do_frame_instr_ptr;    /* .instr_ptr */
	uint16_t do_frame_localsplus;   /* .localsplus */
	uint16_t do_frame_owner;        /* .owner (char) */
	uint16_t do_code_filename;      /* code_object.filename */
	uint16_t do_code_qualname;      /* .qualname */
	uint16_t do_code_adaptive;      /* .co_code_adaptive */
	uint16_t do_dict_keys;          /* dict_object.ma_keys */
	uint16_t do_dict_values;        /* .ma_values */
	uint16_t do_str_state;          /* unicode_object.state */
	uint16_t do_str_length;         /* .length */
	uint16_t do_str_ascii_size;     /* .asciiobject_size */
	/* not published */
	uint8_t owner_entry;            /* a frame of owner >= this one is the C
					 * stack's or the interpreter's entry frame
					 * (FRAME_OWNED_BY_CSTACK in 3.13,
					 * FRAME_OWNED_BY_INTERPRETER from 3.14 on) */
	uint8_t owner_max;              /* the highest owner */
	uint8_t executable_tag;         /* low bits of f_executable and of the
					 * locals (a _PyStackRef) that tag them
					 * (Py_TAG_BITS; 3: Py_INT_TAG too) */
	uint16_t tuple_items;           /* PyTupleObject.ob_item */
	uint16_t gc_generations;        /* _gc_runtime_state.generations (3) */
	uint16_t gc_permanent;          /* .permanent_generation */
	uint16_t gc_collecting;         /* .collecting (int) */
	uint16_t ht_qualname;           /* PyHeapTypeObject.ht_qualname */
	uint16_t ht_cached_keys;        /* .ht_cached_keys */
	uint16_t module_name;           /* PyModuleObject.md_name */
};

#ifdef MW_PYVERSIONS_TABLE
static const struct mw_pyver mw_pyvers[] = {
	{
		.minor = 13,
		.do_interp_gc = 80, .do_ts_current_frame = 184,
		.do_frame_previous = 232, .do_frame_executable = 240, .do_frame_instr_ptr = 248,
		.do_frame_localsplus = 256, .do_frame_owner = 264,
		.do_code_filename = 280, .do_code_qualname = 296, .do_code_adaptive = 344,
		.do_dict_keys = 456, .do_dict_values = 464,
		.do_str_state = 544, .do_str_length = 552, .do_str_ascii_size = 560,
		.owner_entry = 3, .owner_max = 3, .executable_tag = 0,
		.tuple_items = 24, .gc_generations = 24, .gc_permanent = 104, .gc_collecting = 200,
		.ht_qualname = 872, .ht_cached_keys = 880, .module_name = 48,
	},
	{
		.minor = 14,
		.do_interp_gc = 88, .do_ts_current_frame = 208,
		.do_frame_previous = 256, .do_frame_executable = 264, .do_frame_instr_ptr = 272,
		.do_frame_localsplus = 280, .do_frame_owner = 288,
		.do_code_filename = 320, .do_code_qualname = 336, .do_code_adaptive = 384,
		.do_dict_keys = 536, .do_dict_values = 544,
		.do_str_state = 624, .do_str_length = 632, .do_str_ascii_size = 640,
		.owner_entry = 3, .owner_max = 4, .executable_tag = 3,
		.tuple_items = 32, .gc_generations = 24, .gc_permanent = 96, .gc_collecting = 192,
		.ht_qualname = 872, .ht_cached_keys = 880, .module_name = 48,
	},
	{
		.minor = 15,
		.do_interp_gc = 88, .do_ts_current_frame = 208,
		.do_frame_previous = 320, .do_frame_executable = 328, .do_frame_instr_ptr = 336,
		.do_frame_localsplus = 344, .do_frame_owner = 352,
		.do_code_filename = 384, .do_code_qualname = 400, .do_code_adaptive = 448,
		.do_dict_keys = 632, .do_dict_values = 640,
		.do_str_state = 720, .do_str_length = 728, .do_str_ascii_size = 736,
		.owner_entry = 3, .owner_max = 3, .executable_tag = 3,
		.tuple_items = 32, .gc_generations = 8, .gc_permanent = 80, .gc_collecting = 112,
		.ht_qualname = 880, .ht_cached_keys = 888, .module_name = 40,
	},
};
#endif

#endif
