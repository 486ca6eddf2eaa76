/* flame.c: flame graphs as self-contained SVG. Stacks are merged into a tree
 * of frames, outermost first (as folded stacks are), and drawn root at the
 * bottom with widths by bytes, as flamegraph.pl does. Written here rather than
 * through gnuplot: a flame graph is boxes, labels and tooltips, which gnuplot
 * has no plot style for, and the SVG must carry its own script (zoom, search)
 * to be read without network access. */
#include "config.h"
#include "flame.h"
#include "hashmap.h"
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 1200.0
#define PAD 10.0
#define FRAME_H 16.0
#define TOP 66.0
#define BOTTOM 34.0
#define FONT_W 7.1     /* mean width of a character of the 12 px font */
#define MIN_W 0.1      /* narrower boxes are left out, as flamegraph.pl does */
#define NONE UINT32_MAX

/* A node of the tree: one frame under one parent. */
struct node {
	uint32_t label;                 /* string id */
	const char *file, *module;      /* the caller's strings; NULL: unknown */
	uint32_t line;                  /* 0: unknown or several */
	bool inlined, lines_differ;
	bool modules_differ;            /* its frames are in more than one module */
	uint32_t parent, child, next;   /* first child, next sibling */
	uint32_t nkids;
	bool indexed;                   /* its children are in the hash table */
	/* of the stacks through it; until flame_write sums them up the tree,
	 * only of those that end at it */
	uint64_t before, after, bblocks, ablocks;
	uint64_t grew, shrank;          /* diff: the growth of its stacks, split by sign */
};

struct flame {
	bool diff;
	struct node *nodes;
	size_t nnodes, anodes;
	struct hashmap children;        /* struct child: the children of indexed nodes */
	struct strtab strs;             /* labels */
	bool summed;                    /* the counts are summed up the tree */
	/* the stack added last: its frames' labels and nodes. The next most
	 * often starts with the same frames, whose nodes are then had without
	 * a walk down the tree (a dependent load a level) */
	uint32_t *last_label, *last_node;
	size_t nlast, alast;
};

/* An entry of the index of children: the child labelled label of parent. */
struct child {
	uint32_t parent, label, node;
};

static uint64_t child_hash(uint32_t parent, uint32_t label)
{
	return hash_mix64((uint64_t)parent << 32 | label);
}

static bool child_eq(const void *entry, const void *key)
{
	const struct child *a = entry, *k = key;
	return a->parent == k->parent && a->label == k->label;
}

/* The id of string s, interned on first sight. */
static uint32_t intern(struct flame *fl, const char *s)
{
	return s ? strtab_id(&fl->strs, s) : NONE;
}

uint32_t flame_label(struct flame *fl, const char *label)
{
	return intern(fl, label ? label : "<unknown>");
}

static uint32_t node_new(struct flame *fl, uint32_t parent, uint32_t label)
{
	struct node *n;
	if (fl->nnodes == fl->anodes) {
		fl->anodes = fl->anodes ? fl->anodes * 2 : 1024;
		fl->nodes = xrealloc(fl->nodes, fl->anodes * sizeof *fl->nodes);
	}
	n = &fl->nodes[fl->nnodes];
	memset(n, 0, sizeof *n);
	n->label = label;
	n->file = n->module = NULL;
	n->parent = parent;
	n->child = n->next = NONE;
	if (parent != NONE) {
		n->next = fl->nodes[parent].child;
		fl->nodes[parent].child = (uint32_t)fl->nnodes;
	}
	return (uint32_t)fl->nnodes++;
}

/* Enter node, child of parent labelled label, in the index. */
static void child_put(struct flame *fl, uint32_t parent, uint32_t label, uint32_t node)
{
	struct child key = { parent, label, node };
	bool added;

	*(struct child *)hashmap_put(&fl->children, child_hash(parent, label), child_eq, &key,
				     &added) = key;
}

/* Put the children of p in the index. */
static void index_children(struct flame *fl, uint32_t p)
{
	for (uint32_t c = fl->nodes[p].child; c != NONE; c = fl->nodes[c].next)
		child_put(fl, p, fl->nodes[c].label, c);
	fl->nodes[p].indexed = true;
}

/* The child of parent labelled label, made if new. Most nodes have one child
 * or a few (a stack's frames past where it parts from the others have one):
 * those are found along the list of children; a node's children go into the
 * hash table once there are more. */
static uint32_t child_get(struct flame *fl, uint32_t parent, uint32_t label)
{
	struct child key = { parent, label, 0 }, *e;
	bool added;
	uint32_t k;

	if (!fl->nodes[parent].indexed) {
		for (k = fl->nodes[parent].child; k != NONE; k = fl->nodes[k].next)
			if (fl->nodes[k].label == label)
				return k;
		k = node_new(fl, parent, label);
		if (++fl->nodes[parent].nkids > 4)
			index_children(fl, parent);
		return k;
	}
	/* the index holds the key: a probe does not touch the nodes */
	e = hashmap_put(&fl->children, child_hash(parent, label), child_eq, &key, &added);
	if (!added)
		return e->node;
	*e = key;
	/* node_new does not touch the index: e is still good */
	k = node_new(fl, parent, label);
	e->node = k;
	fl->nodes[parent].nkids++;
	return k;
}

static const char *str(const struct flame *fl, uint32_t id)
{
	return id == NONE ? NULL : fl->strs.s[id];
}

struct flame *flame_new(bool diff)
{
	struct flame *fl = xcalloc(1, sizeof *fl);
	fl->diff = diff;
	hashmap_init(&fl->children, sizeof(struct child));
	strtab_init(&fl->strs);
	node_new(fl, NONE, intern(fl, "all"));
	return fl;
}

static void node_count(struct node *n, uint64_t before, uint64_t after, uint64_t bb, uint64_t ab)
{
	n->before += before;
	n->after += after;
	n->bblocks += bb;
	n->ablocks += ab;
	if (after > before)
		n->grew += after - before;
	else
		n->shrank += before - after;
}

/* Are a and b (either may be NULL) the same string? */
static bool same_string(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Frame fr is one more of node nd's: where one label stands for several
 * places, the tooltip says so. (The first frame's module would depend on
 * the order of the stacks.) */
static inline void node_place(struct node *nd, const struct flame_frame *fr)
{
	if (nd->lines_differ && nd->modules_differ)
		return;
	if (!nd->lines_differ && (nd->line != fr->line || !same_string(nd->file, fr->file)))
		nd->lines_differ = true;
	if (!nd->modules_differ && !same_string(nd->module, fr->module))
		nd->modules_differ = true;
}

void flame_add(struct flame *fl, const struct flame_frame *frames, size_t n, uint64_t before,
	       uint64_t after, uint64_t blocks_before, uint64_t blocks_after)
{
	uint32_t cur = 0;
	size_t i;

	if (n > fl->alast) {
		fl->alast = n * 2;
		fl->last_label = xrealloc(fl->last_label, fl->alast * sizeof *fl->last_label);
		fl->last_node = xrealloc(fl->last_node, fl->alast * sizeof *fl->last_node);
	}
	for (i = 0; i < n; i++) {
		const struct flame_frame *fr = &frames[i];
		uint32_t label = fr->has_id ? fr->label_id : flame_label(fl, fr->label);
		struct node *nd;

		if (i < fl->nlast && fl->last_label[i] == label) {
			cur = fl->last_node[i];
			node_place(&fl->nodes[cur], fr);
			continue;
		}
		size_t old = fl->nnodes;
		cur = child_get(fl, cur, label);
		nd = &fl->nodes[cur];
		if (fl->nnodes > old) {
			nd->file = fr->file;
			nd->line = fr->line;
			nd->module = fr->module;
			nd->inlined = fr->inlined;
		} else {
			node_place(nd, fr);
		}
		fl->last_label[i] = label;
		fl->last_node[i] = cur;
		/* the frames past one not shared are not either */
		fl->nlast = i + 1;
	}
	fl->nlast = n;
	node_count(&fl->nodes[cur], before, after, blocks_before, blocks_after);
}

/* The counts of the stacks that end at each node made those of all through
 * it: a node's children were made after it. */
static void sum_up(struct flame *fl)
{
	if (fl->summed)
		return;
	for (size_t k = fl->nnodes; k-- > 1;) {
		const struct node *c = &fl->nodes[k];
		struct node *p = &fl->nodes[c->parent];
		p->before += c->before;
		p->after += c->after;
		p->bblocks += c->bblocks;
		p->ablocks += c->ablocks;
		p->grew += c->grew;
		p->shrank += c->shrank;
	}
	fl->summed = true;
}

void flame_free(struct flame *fl)
{
	if (!fl)
		return;
	strtab_release(&fl->strs);
	hashmap_release(&fl->children);
	free(fl->last_label);
	free(fl->last_node);
	free(fl->nodes);
	free(fl);
}

void flame_escape(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	while (*p) {
		unsigned c = *p;
		size_t len = 0, k;
		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c == '\n' || c == '\t')
			fputc((int)c, f);
		else if (c < 0x20 || c == 0x7f)
			fputc('?', f);
		else if (c < 0x80)
			fputc((int)c, f);
		if (c < 0x80) {
			p++;
			continue;
		}
		/* a whole UTF-8 sequence passes, anything else is one '?' a byte */
		len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		for (k = 1; k < len; k++)
			if ((p[k] & 0xc0) != 0x80)
				break;
		if (len && k == len) {
			fwrite(p, 1, len, f);
			p += len;
		} else {
			fputc('?', f);
			p++;
		}
	}
}

/* The value that sets a node's width. */
static uint64_t node_value(const struct flame *fl, const struct node *n)
{
	return fl->diff ? n->grew + n->shrank : n->after;
}

/* Children sorted by label, so that a graph reads the same whatever the order
 * of the stacks (qsort has no context argument: the graph being drawn). */
static const struct flame *sort_fl;
static int cmp_child(const void *a, const void *b)
{
	const struct node *x = &sort_fl->nodes[*(const uint32_t *)a];
	const struct node *y = &sort_fl->nodes[*(const uint32_t *)b];
	return strcmp(sort_fl->strs.s[x->label], sort_fl->strs.s[y->label]);
}

/* A node's fill colour. A graph of one snapshot: greens and blues by a hash of
 * the label (as flamegraph.pl's memory palette), so a function keeps its colour.
 * A diff: red for growth, blue for shrinkage, paler where the two mix. */
static void node_color(const struct flame *fl, const struct node *n, char *buf, size_t len)
{
	if (fl->diff) {
		double w = (double)(n->grew + n->shrank);
		double net = w > 0 ? ((double)n->grew - (double)n->shrank) / w : 0;
		int pale = (int)lround(225 - 175 * fabs(net));
		if (net > 0)
			snprintf(buf, len, "rgb(255,%d,%d)", pale, pale);
		else if (net < 0)
			snprintf(buf, len, "rgb(%d,%d,255)", pale, pale);
		else
			snprintf(buf, len, "rgb(215,215,215)");
	} else {
		uint64_t h = hash_str(fl->strs.s[n->label]);
		h ^= h >> 31;
		double v1 = (double)(h & 0xff) / 255, v2 = (double)((h >> 8) & 0xff) / 255;
		snprintf(buf, len, "rgb(%d,%d,%d)", (int)(40 * v2), (int)(170 + 70 * v1),
			 (int)(90 + 120 * v2));
	}
}

/* The tooltip of a node: its label, where it is, its bytes. */
static void node_title(FILE *f, const struct flame *fl, const struct node *n, uint64_t total)
{
	char b1[32], b2[32], b3[32];
	const char *file = n->file, *mod = n->module, *base;

	flame_escape(f, str(fl, n->label));
	if (n->parent != NONE) {
		fputc('\n', f);
		if (file && !n->lines_differ) {
			base = strrchr(file, '/');
			flame_escape(f, base ? base + 1 : file);
			if (n->line)
				fprintf(f, ":%" PRIu32, n->line);
		} else if (file || n->lines_differ) {
			fputs("several places", f);
		} else {
			fputs("no source line", f);
		}
		if (n->modules_differ) {
			fputs(" in several modules", f);
		} else if (mod) {
			fputs(" in ", f);
			flame_escape(f, mod);
		}
		if (n->inlined && !n->lines_differ)
			fputs(" [inlined]", f);
	}
	fputc('\n', f);
	if (fl->diff) {
		int64_t net = (int64_t)n->after - (int64_t)n->before;
		int64_t nb = (int64_t)n->ablocks - (int64_t)n->bblocks;
		fprintf(f, "%s%s (grew %s, shrank %s); blocks %+" PRId64 "\n", net > 0 ? "+" : "",
			fmt_bytes(b1, sizeof b1, (double)net), fmt_bytes(b2, sizeof b2, (double)n->grew),
			fmt_bytes(b3, sizeof b3, (double)n->shrank), nb);
		fprintf(f, "before %s, after %s", fmt_bytes(b1, sizeof b1, (double)n->before),
			fmt_bytes(b2, sizeof b2, (double)n->after));
	} else {
		fprintf(f, "%s, %.1f%% of the live heap, %" PRIu64 " blocks",
			fmt_bytes(b1, sizeof b1, (double)n->after),
			total ? 100.0 * (double)n->after / (double)total : 0.0, n->ablocks);
	}
}

/* The label as it fits in a box w pixels wide ("" when not even 3 characters do). */
static void box_text(FILE *f, const char *label, double w)
{
	size_t fit = w > 6 ? (size_t)((w - 6) / FONT_W) : 0, len = strlen(label);
	char *s;

	if (fit < 3)
		return;
	if (len <= fit) {
		flame_escape(f, label);
		return;
	}
	s = xstrdup(label);
	fit -= 2;
	/* not inside a UTF-8 character */
	while (fit > 0 && ((unsigned char)s[fit] & 0xc0) == 0x80)
		fit--;
	s[fit] = '\0';
	flame_escape(f, s);
	fputs("..", f);
	free(s);
}

/* Lay out and draw node k and what is above it: x its left edge, depth its
 * distance from the root. Returns the largest depth drawn. */
static int draw(FILE *f, struct flame *fl, uint32_t k, double x, int depth, double scale,
		double base_y, uint64_t total)
{
	const struct node *n = &fl->nodes[k];
	double w = (double)node_value(fl, n) * scale, y = base_y - (depth + 1) * FRAME_H;
	uint32_t *kids, nk = 0, c;
	int max = depth;
	char color[40];

	node_color(fl, n, color, sizeof color);
	fputs("<g class=\"mwf\"><title>", f);
	node_title(f, fl, n, total);
	fprintf(f, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" "
		   "rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		x, y, w, FRAME_H - 1, color, x + 3, y + FRAME_H - 5);
	box_text(f, str(fl, n->label), w);
	fputs("</text></g>\n", f);

	for (c = n->child; c != NONE; c = fl->nodes[c].next)
		nk++;
	if (nk == 0)
		return max;
	kids = xmalloc(nk * sizeof *kids);
	nk = 0;
	for (c = n->child; c != NONE; c = fl->nodes[c].next)
		kids[nk++] = c;
	sort_fl = fl;
	qsort(kids, nk, sizeof *kids, cmp_child);
	for (uint32_t i = 0; i < nk; i++) {
		double cw = (double)node_value(fl, &fl->nodes[kids[i]]) * scale;
		if (cw >= MIN_W) {
			int d = draw(f, fl, kids[i], x, depth + 1, scale, base_y, total);
			if (d > max)
				max = d;
		}
		x += cw;
	}
	free(kids);
	return max;
}

/* The depth of the tree as drawn (boxes of at least MIN_W). */
static int depth_of(const struct flame *fl, uint32_t k, double scale)
{
	int max = 0;
	for (uint32_t c = fl->nodes[k].child; c != NONE; c = fl->nodes[c].next) {
		if ((double)node_value(fl, &fl->nodes[c]) * scale >= MIN_W) {
			int d = depth_of(fl, c, scale) + 1;
			if (d > max)
				max = d;
		}
	}
	return max;
}

/* The script: tooltips on the status line, click to zoom, search (a button,
 * Ctrl-F or '/'), Escape to reset. Plain ES5, no network, and it finds its own
 * <svg> so that several graphs can share a page. */
static const char script[] =
	"(function () {\n"
	"var cs = document.currentScript;\n"
	"var svg = cs && cs.closest ? cs.closest('svg') : document.documentElement;\n"
	"var W = +svg.getAttribute('data-width'), PAD = 10, FW = 7.1;\n"
	"var frames = [].slice.call(svg.querySelectorAll('g.mwf'));\n"
	"var details = svg.querySelector('.mwf-details');\n"
	"var unzoomBtn = svg.querySelector('.mwf-unzoom');\n"
	"var searchBtn = svg.querySelector('.mwf-search');\n"
	"var matched = svg.querySelector('.mwf-matched');\n"
	"var term = '';\n"
	"frames.forEach(function (g) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('title').textContent;\n"
	"  g.mwx = +r.getAttribute('x'); g.mwy = +r.getAttribute('y');\n"
	"  g.mww = +r.getAttribute('width'); g.mwfill = r.getAttribute('fill');\n"
	"  g.mwlabel = t.split('\\n')[0];\n"
	"  g.addEventListener('mouseover', function () { details.textContent = t.replace(/\\n/g, '  \\u00b7  '); });\n"
	"  g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  g.addEventListener('click', function () { zoom(g); });\n"
	"});\n"
	"function place(g, x, w) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"  var n = Math.floor((w - 6) / FW), s = g.mwlabel;\n"
	"  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', w.toFixed(2));\n"
	"  t.setAttribute('x', (x + 3).toFixed(2));\n"
	"  if (n < 3) s = ''; else if (s.length > n) s = s.substring(0, n - 2) + '..';\n"
	"  t.textContent = s;\n"
	"}\n"
	"function zoom(node) {\n"
	"  var nx = node.mwx, nw = node.mww, ny = node.mwy, k = (W - 2 * PAD) / nw, e = 0.005;\n"
	"  frames.forEach(function (g) {\n"
	"    var inside = g.mwx >= nx - e && g.mwx + g.mww <= nx + nw + e;\n"
	"    var covers = g.mwx <= nx + e && g.mwx + g.mww >= nx + nw - e;\n"
	"    if (g.mwy > ny && covers) {\n"
	"      g.style.display = ''; g.style.opacity = '0.6'; place(g, PAD, W - 2 * PAD);\n"
	"    } else if (g.mwy <= ny && inside) {\n"
	"      g.style.display = ''; g.style.opacity = ''; place(g, PAD + (g.mwx - nx) * k, g.mww * k);\n"
	"    } else {\n"
	"      g.style.display = 'none';\n"
	"    }\n"
	"  });\n"
	"  unzoomBtn.style.opacity = '1';\n"
	"}\n"
	"function unzoom() {\n"
	"  frames.forEach(function (g) { g.style.display = ''; g.style.opacity = ''; place(g, g.mwx, g.mww); });\n"
	"  unzoomBtn.style.opacity = '0';\n"
	"}\n"
	"function search(s) {\n"
	"  var re = null, spans = [], tot = 0, end = -1;\n"
	"  term = s || '';\n"
	"  try { re = new RegExp(term); } catch (err) { re = null; }\n"
	"  frames.forEach(function (g) {\n"
	"    var hit = term !== '' && (re ? re.test(g.mwlabel) : g.mwlabel.indexOf(term) >= 0);\n"
	"    g.querySelector('rect').setAttribute('fill', hit ? 'rgb(230,0,230)' : g.mwfill);\n"
	"    if (hit) spans.push([g.mwx, g.mwx + g.mww]);\n"
	"  });\n"
	"  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
	"  spans.forEach(function (p) {\n"
	"    if (p[0] >= end) { tot += p[1] - p[0]; end = p[1]; }\n"
	"    else if (p[1] > end) { tot += p[1] - end; end = p[1]; }\n"
	"  });\n"
	"  matched.textContent = term === '' ? ' ' : spans.length ?\n"
	"    'Matched: ' + (100 * tot / (W - 2 * PAD)).toFixed(1) + '%' : 'No match';\n"
	"}\n"
	"function ask() {\n"
	"  var s = window.prompt('Search frames (a regular expression)', term);\n"
	"  if (s !== null) search(s);\n"
	"}\n"
	"unzoomBtn.addEventListener('click', unzoom);\n"
	"searchBtn.addEventListener('click', ask);\n"
	"/* keys only where the graph is the document: a page may hold several */\n"
	"if (svg === document.documentElement) window.addEventListener('keydown', function (ev) {\n"
	"  if ((ev.ctrlKey && ev.key === 'f') || ev.key === '/') { ev.preventDefault(); ask(); }\n"
	"  else if (ev.key === 'Escape') { search(''); unzoom(); }\n"
	"});\n"
	"/* for tests and tools: the script ran to its end */\n"
	"svg.setAttribute('data-ready', frames.length);\n"
	"})();\n";

void flame_write(struct flame *fl, FILE *f, const char *title, const char *subtitle, bool inline_svg)
{
	const struct node *root = &fl->nodes[0];
	uint64_t total;

	sum_up(fl);
	total = node_value(fl, root);
	double scale = total ? (WIDTH - 2 * PAD) / (double)total : 0;
	int depth = total ? depth_of(fl, 0, scale) : 0;
	double height = TOP + (depth + 1) * FRAME_H + BOTTOM, base_y = height - BOTTOM;

	if (!inline_svg)
		fputs("<?xml version=\"1.0\" standalone=\"no\"?>\n", f);
	fprintf(f, "<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		   "data-width=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\" class=\"mwflame\">\n",
		WIDTH, height, WIDTH, height, WIDTH);
	fputs("<style type=\"text/css\">\n"
	      ".mwflame text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 12px; fill: #000; }\n"
	      ".mwflame .mwf-title { font-size: 17px; }\n"
	      ".mwflame .mwf-sub { fill: #444; }\n"
	      ".mwflame g.mwf text { pointer-events: none; }\n"
	      ".mwflame g.mwf:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
	      ".mwflame .mwf-unzoom, .mwflame .mwf-search { cursor: pointer; fill: #224; }\n"
	      "</style>\n", f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"%s\"/>\n", WIDTH,
		height, fl->diff ? "rgb(248,248,248)" : "rgb(240,248,245)");
	fprintf(f, "<text class=\"mwf-title\" x=\"%.0f\" y=\"24\" text-anchor=\"middle\">", WIDTH / 2);
	flame_escape(f, title);
	fprintf(f, "</text>\n<text class=\"mwf-sub\" x=\"%.0f\" y=\"44\" text-anchor=\"middle\">",
		WIDTH / 2);
	flame_escape(f, subtitle);
	fputs("</text>\n", f);
	fprintf(f, "<text class=\"mwf-unzoom\" x=\"%.0f\" y=\"24\" style=\"opacity:0\">Reset Zoom</text>\n",
		PAD);
	fprintf(f, "<text class=\"mwf-search\" x=\"%.0f\" y=\"24\" text-anchor=\"end\">Search</text>\n",
		WIDTH - PAD);
	fprintf(f, "<text class=\"mwf-details\" x=\"%.0f\" y=\"%.0f\"> </text>\n", PAD, height - 12);
	fprintf(f, "<text class=\"mwf-matched\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\"> </text>\n",
		WIDTH - PAD, height - 12);
	fputs("<g>\n", f);
	if (total)
		draw(f, fl, 0, PAD, 0, scale, base_y, total);
	else
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">nothing to draw: %s</text>\n",
			WIDTH / 2, base_y - 4, fl->diff ? "no stack changed" : "no live bytes");
	fputs("</g>\n<script type=\"text/ecmascript\"><![CDATA[\n", f);
	fputs(script, f);
	fputs("]]></script>\n</svg>\n", f);
}
