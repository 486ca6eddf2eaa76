/* v8layout.c: the V8 versions the agent reads, and what it reads of each
 * (v8layout.h). A new V8 costs an entry here, checked by
 * tests/run-node-layout.sh against its headers, when it changes nothing
 * but offsets. Checked against: V8 10.2 (node 18, Debian 12's libnode-dev),
 * 11.3 (node 20), 12.4 (node 22.23), 13.6 (node 24.21, and Debian's nodejs
 * 24 with its shared libnode), 14.6 (node 26.12). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "v8layout.h"

#define MW_HIDDEN __attribute__((visibility("hidden")))

/* The profile's structures, alike from 10.2 to 13.6: a Node's two
 * Local<String>, four ints, its node_id, then its two vectors; an
 * Allocation's size_t and unsigned; a Sample's node_id, size, count,
 * sample_id (32 bytes), and from 14.6 on is_live (40). */
#define PROFILE(sample) \
	.node_name = 0, .node_script_name = 8, .node_line = 24, .node_column = 28, .node_id = 32, \
	.node_children = 40, .node_allocations = 64, \
	.alloc_size = 16, .alloc_bytes = 0, .alloc_count = 8, \
	.sample_size = (sample), .sample_node_id = 0, .hs_size = 24

MW_HIDDEN const struct v8_layout mw_v8_layouts[] = {
	{ .version = "10.2", PROFILE(32), .strings = V8_WRITE_UTF8, .scope = V8_SCOPE_CALLED },
	{ .version = "11.3", PROFILE(32), .strings = V8_WRITE_UTF8, .scope = V8_SCOPE_CALLED },
	{ .version = "12.4", PROFILE(32), .strings = V8_WRITE_UTF8, .scope = V8_SCOPE_CALLED },
	/* WriteUtf8 deprecated for WriteUtf8V2 (both exported) */
	{ .version = "13.6", PROFILE(32), .strings = V8_WRITE_UTF8_V2, .scope = V8_SCOPE_CALLED },
	/* Sample gained is_live (a bool after sample_id: 40 bytes); WriteUtf8
	 * is gone; HandleScope's constructor and destructor are inline */
	{ .version = "14.6", PROFILE(40), .strings = V8_WRITE_UTF8_V2,
	  .scope = V8_SCOPE_INLINE, .hs_data = 560 },
};
MW_HIDDEN const size_t mw_v8_nlayouts = sizeof mw_v8_layouts / sizeof mw_v8_layouts[0];

MW_HIDDEN const struct v8_layout *mw_v8_layout(const char *version)
{
	size_t i, n;
	for (i = 0; i < mw_v8_nlayouts; i++) {
		n = strlen(mw_v8_layouts[i].version);
		if (!strncmp(version, mw_v8_layouts[i].version, n) && version[n] == '.')
			return &mw_v8_layouts[i];
	}
	return NULL;
}

MW_HIDDEN void mw_v8_versions(char *buf, size_t len)
{
	size_t i, n = 0;
	buf[0] = 0;
	for (i = 0; i < mw_v8_nlayouts && n < len; i++) {
		snprintf(buf + n, len - n, "%s%s", i ? ", " : "", mw_v8_layouts[i].version);
		n += strlen(buf + n);
	}
}
