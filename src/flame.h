/* flame.h: flame graphs as self-contained SVG: stacks are merged into a tree of
 * frames, outermost first, drawn with widths by bytes; a script embedded in the
 * SVG gives tooltips, zoom and search without any network access. */
#ifndef MEMWATCH_FLAME_H
#define MEMWATCH_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One frame of a stack as the graph shows it. label is copied; file and module
 * are kept as they are: they must live as long as the graph. */
struct flame_frame {
	const char *label;        /* what frames merge on and the box says */
	const char *file;         /* source file or NULL */
	uint32_t line;
	const char *module;       /* module name or NULL */
	bool inlined;
	bool has_id;              /* label_id is flame_label's number of the label
				   * (label itself is then not read) */
	uint32_t label_id;
};

struct flame;

/* A new graph. diff: a differential one (widths by the bytes that changed,
 * red for growth and blue for shrinkage), else widths by live bytes. */
struct flame *flame_new(bool diff);
/* The number of a frame's label in graph fl (a flame_frame's label_id): a
 * caller that gives the same label often finds it once. */
uint32_t flame_label(struct flame *fl, const char *label);
/* Add one stack, outermost frame first, with its bytes and blocks before and
 * after (a graph of one snapshot passes zeros before). */
void flame_add(struct flame *fl, const struct flame_frame *frames, size_t n, uint64_t before,
	       uint64_t after, uint64_t blocks_before, uint64_t blocks_after);
/* Write the graph as an SVG document (inline: as an <svg> element to be put in
 * an HTML page, without the XML prolog). title and subtitle are plain text.
 * No stack is added after it. */
void flame_write(struct flame *fl, FILE *f, const char *title, const char *subtitle, bool inline_svg);
void flame_free(struct flame *fl);

/* Write s as XML/HTML text: markup characters escaped, control characters and
 * bytes that are not UTF-8 replaced, so that a browser's strict parser takes it. */
void flame_escape(FILE *f, const char *s);

#endif
