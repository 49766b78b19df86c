/* The "JIT-compiled" function of tests/workloads/jit/chain.c: built with
 * frame pointers, in a section of its own whose bytes chain.c copies into
 * anonymous executable memory and runs from there.  Position-independent
 * by construction: no calls, no globals, only its own frame (a volatile
 * local keeps the loop in memory addressed from rbp). */
__attribute__((section("jit_text"), noinline, used)) unsigned long jit_code(unsigned long n)
{
	volatile unsigned long s = n;
	unsigned long i;

	for (i = 0; i < n; i++)
		s = s * 31 + i;
	return s;
}
