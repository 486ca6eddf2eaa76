/* snapmsg.h: the decoder's cause strings (snapdecode.c's alone), made
 * without stdio: a small formatter that knows what its messages use. */
#ifndef MEMWATCH_SNAPMSG_H
#define MEMWATCH_SNAPMSG_H

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct msgbuf {
	char s[320];
	size_t n;
};

/* Append a string, silently cut at the buffer's end. */
static inline void msg_str(struct msgbuf *m, const char *s)
{
	while (*s && m->n + 1 < sizeof m->s)
		m->s[m->n++] = *s++;
	m->s[m->n] = '\0';
}

/* Append an unsigned number in decimal. */
static inline void msg_u64(struct msgbuf *m, uint64_t v)
{
	char d[24];
	int i = sizeof d - 1;
	d[i] = '\0';
	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	msg_str(m, d + i);
}

/* Set *cause to a new string formatted from fmt, which knows %s, %u, %d, %zu and
 * %llu (enough for every message here). On memory exhaustion *cause stays NULL. */
__attribute__((format(printf, 2, 3)))
static inline void set_cause(char **cause, const char *fmt, ...)
{
	struct msgbuf m = { .n = 0 };
	va_list ap;

	if (!cause || *cause)
		return; /* the first, most precise, message wins */
	m.s[0] = '\0';
	va_start(ap, fmt);
	for (const char *p = fmt; *p; p++) {
		char c[2] = { *p, '\0' };
		if (*p != '%') {
			msg_str(&m, c);
			continue;
		}
		p++;
		if (*p == 's') {
			const char *s = va_arg(ap, const char *);
			msg_str(&m, s ? s : "(null)");
		} else if (*p == 'u') {
			msg_u64(&m, va_arg(ap, unsigned int));
		} else if (*p == 'd') {
			int v = va_arg(ap, int);
			if (v < 0)
				msg_str(&m, "-");
			msg_u64(&m, v < 0 ? -(uint64_t)v : (uint64_t)v);
		} else if (p[0] == 'z' && p[1] == 'u') {
			p++;
			msg_u64(&m, va_arg(ap, size_t));
		} else if (p[0] == 'l' && p[1] == 'l' && p[2] == 'u') {
			p += 2;
			msg_u64(&m, va_arg(ap, unsigned long long));
		} else if (*p == '%') {
			msg_str(&m, "%");
		} else {
			break; /* not a conversion this formatter knows: stop here */
		}
	}
	va_end(ap);
	*cause = strdup(m.s);
}

#endif
