/* A tiny translation unit compiled both ways (test/base/CMakeLists.txt): PROBE_ASSERTS=1 turns
 * HAKO_ASSERT on whatever the build type, PROBE_ASSERTS=0 turns it off. */
#undef HAKO_ASSERTS
#if PROBE_ASSERTS
#define HAKO_ASSERTS 1
#define PROBE(name)  probe_on_##name
#else
#define PROBE(name) probe_off_##name
#endif

#include "assert_probe.h"
#include "hakoi/assert.h"

/* Named only by the assertions: evaluated only when they are on. */
static int counted(int *n)
{
	return ++*n > 0;
}

int PROBE(count)(int *n)
{
	HAKO_ASSERT(counted(n));
	HAKO_ASSERT_MSG(counted(n), "n is %d", *n);
	return *n;
}

void PROBE(fail)(int *line)
{
	*line = __LINE__ + 1;
	HAKO_ASSERT(sizeof(int) == 0);
}

void PROBE(fail_msg)(int x, int *line)
{
	*line = __LINE__ + 1;
	HAKO_ASSERT_MSG(x == 42, "x is %d", x);
}
