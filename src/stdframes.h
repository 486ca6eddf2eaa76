/* stdframes.h: which frames are a language's standard library, by name
 * (stdframes.c). */
#ifndef MEMWATCH_STDFRAMES_H
#define MEMWATCH_STDFRAMES_H

#include <stdbool.h>

/* Is fn, a demangled function name, the C++ or the Rust standard library's?
 * False for NULL. */
bool std_name(const char *fn);

#endif
