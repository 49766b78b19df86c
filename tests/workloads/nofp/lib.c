/* The dlopen'ed half of chain.c: built -O2 -fomit-frame-pointer as a
 * shared library by tests/e2e/test_native_unwind.sh and bench/run. */
__attribute__((noinline)) unsigned long lib_spin(unsigned long n)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += i * i;
	return x;
}
__attribute__((noinline)) unsigned long lib_entry(unsigned long n) { return lib_spin(n) + 1; }
