/* attach_badlib.c: a library that dlopen(RTLD_NOW) refuses, because it needs a
 * function no loaded object defines; the attach tests expect dlerror's text. */
extern int mw_attach_no_such_function(void);

int memwatch_agent_start(const char *options, int *result);
int memwatch_agent_start(const char *options, int *result)
{
	(void)options;
	return *result = mw_attach_no_such_function();
}
