/* stdframes.c: which frames are a language's standard library, by their
 * demangled names: C++'s (std::, __gnu_cxx::, the C++ runtime, operator new
 * and delete) and Rust's (its crates std, core, alloc and hashbrown, their
 * impls, the allocator's shims). The reports pass over them to head a row
 * with the user's own frame, and leave them out below it. */
#include "config.h"
#include "stdframes.h"

#include <stddef.h>
#include <string.h>

/* The qualified name in a demangled one, past the return type that names of
 * template functions carry ("void std::vector<…>::_M_realloc_insert<…>(…)"). */
static const char *qualified_name(const char *fn)
{
	const char *p, *start = fn;
	int depth = 0;

	for (p = fn; *p && !(*p == '(' && depth == 0); p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth > 0)
			depth--;
		else if (*p == ' ' && depth == 0 && strncmp(start, "operator", 8) != 0)
			start = p + 1;
	}
	return start;
}

/* Does the path p start with a crate of Rust's standard library (or
 * hashbrown, std's HashMap), or with the C++ one's std::? */
static bool rust_std_path(const char *p)
{
	static const char *const crates[] = { "std::", "core::", "alloc::", "hashbrown::" };

	for (;;) {
		if (*p == '&' || *p == '[' || *p == '(')
			p++;
		else if (!strncmp(p, "mut ", 4) || !strncmp(p, "dyn ", 4))
			p += 4;
		else if (!strncmp(p, "*mut ", 5))
			p += 5;
		else if (!strncmp(p, "*const ", 7))
			p += 7;
		else
			break;
	}
	for (size_t i = 0; i < sizeof crates / sizeof crates[0]; i++)
		if (!strncmp(p, crates[i], strlen(crates[i])))
			return true;
	return false;
}

/* Does the type at p (up to " as " or the closing '>') name a path, as
 * myapp::Order does, and str, &F or [T] do not? */
static bool names_path(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth-- == 0)
			return false;
		else if (depth == 0 && !strncmp(p, " as ", 4))
			return false;
		else if (depth == 0 && p[0] == ':' && p[1] == ':')
			return true;
	}
	return false;
}

/* Is the impl that "<SELF as TRAIT>::f", "<SELF>::f" or "<impl TRAIT for
 * SELF>::f" names the standard library's: SELF a type of its crates, or
 * TRAIT one of its traits for a SELF that names no path (str, &F, a generic
 * T)? A std trait for the user's own type is the user's. */
static bool rust_impl_std(const char *fn)
{
	const char *self = fn + 1, *trait = NULL, *p;
	bool impl = !strncmp(self, "impl ", 5);
	const char *sep = impl ? " for " : " as ";
	size_t seplen = strlen(sep);
	int depth = 0;

	if (impl) {
		trait = self + 5;
		self = NULL;
	}
	for (p = impl ? trait : self; *p; p++) {
		if (*p == '<') {
			depth++;
		} else if (*p == '>' && depth-- == 0) {
			break;
		} else if (depth == 0 && !strncmp(p, sep, seplen)) {
			if (impl)
				self = p + seplen;
			else
				trait = p + seplen;
			break;
		}
	}
	if (!self)
		return false;
	if (rust_std_path(self))
		return true;
	return trait && rust_std_path(trait) && !names_path(self);
}

/* A Rust standard library name, as libiberty demangles it (no parameter
 * list, unlike a C++ one): a path in std, core, alloc or hashbrown
 * ("alloc::raw_vec::finish_grow"), an impl of theirs (rust_impl_std:
 * "<alloc::alloc::Global as core::alloc::Allocator>::grow",
 * "<hashbrown::raw::RawTable<T>>::insert", "<str as
 * alloc::borrow::ToOwned>::to_owned"), or the allocator's shims
 * (__rust_alloc, __rdl_alloc, __rg_alloc). */
static bool rust_std_name(const char *fn)
{
	const char *p;
	int depth = 0;

	/* a C++ name has its parameters, a Rust one none: a C++ namespace
	 * called core or alloc is the user's */
	for (p = fn; *p; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth > 0)
			depth--;
		else if (*p == '(' && depth == 0)
			return false;
	}
	if (!strncmp(fn, "__rust_", 7) || !strncmp(fn, "__rdl_", 6) || !strncmp(fn, "__rg_", 5) ||
	    rust_std_path(fn))
		return true;
	return fn[0] == '<' && rust_impl_std(fn);
}

/* A C++ standard library name: its templates are inlined into the caller;
 * or a Rust one, likewise. */
bool std_name(const char *fn)
{
	const char *q;
	if (!fn)
		return false;
	if (rust_std_name(fn))
		return true;
	q = qualified_name(fn);
	return !strncmp(q, "std::", 5) || !strncmp(q, "__gnu_cxx::", 11) ||
	       !strncmp(q, "__cxxabiv1::", 12) || !strncmp(q, "__cxa_", 6) ||
	       !strncmp(fn, "operator new", 12) || !strncmp(fn, "operator delete", 15);
}
