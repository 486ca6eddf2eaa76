/* v8layout-dump: the agent's table of V8 layouts (src/agent/v8layout.c),
 * as "NAME VALUE" lines, for tests/run-node-layout.sh to compare with what a
 * program compiled against a V8's headers says.
 *
 * Usage: v8layout-dump MAJOR.MINOR   that version's entry (status 1: none)
 *        v8layout-dump               the versions in the table, one a line */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "v8layout.h"

int main(int argc, char **argv)
{
	const struct v8_layout *l;
	char v[32];
	size_t i;

	if (argc < 2) {
		for (i = 0; i < mw_v8_nlayouts; i++)
			printf("%s\n", mw_v8_layouts[i].version);
		return 0;
	}
	snprintf(v, sizeof v, "%s.", argv[1]);
	if (!(l = mw_v8_layout(v))) {
		fprintf(stderr, "v8layout-dump: no entry for V8 %s\n", argv[1]);
		return 1;
	}
#define P(f) printf("%s %u\n", #f, (unsigned)l->f)
	P(node_name);
	P(node_script_name);
	P(node_line);
	P(node_column);
	P(node_id);
	P(node_children);
	P(node_allocations);
	P(alloc_size);
	P(alloc_bytes);
	P(alloc_count);
	P(sample_size);
	P(sample_node_id);
	P(hs_size);
	printf("strings %s\n", l->strings == V8_WRITE_UTF8_V2 ? "WriteUtf8V2" : "WriteUtf8");
	printf("scope %s\n", l->scope == V8_SCOPE_INLINE ? "inline" : "called");
	if (l->scope == V8_SCOPE_INLINE) {
		P(hs_data);
		printf("hsd_next %zu\nhsd_limit %zu\nhsd_level %zu\nhsd_sealed_level %zu\n",
		       offsetof(struct v8_hs_data, next), offsetof(struct v8_hs_data, limit),
		       offsetof(struct v8_hs_data, level), offsetof(struct v8_hs_data, sealed_level));
	}
	printf("vt_root %d\nvt_samples %d\nvt_delete %d\n", V8_VT_ROOT, V8_VT_SAMPLES, V8_VT_DELETE);
	printf("hs_room %d\n", V8_HS_ROOM);
	return 0;
}
