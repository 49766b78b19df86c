/* fp_chain: a call chain built with frame pointers, spinning in its
 * leaf: main -> fp_c1 .. fp_c4 -> fp_spin.  Only the program's own
 * frames, no C library function between them, so a frame-pointer walk
 * alone names them all (kernel.arm64.*, before profd reads arm64
 * .eh_frame).  usage: fp_chain SECONDS */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void fp_spin(void)
{
	for (int i = 0; i < 100000; i++)
		sink += (unsigned long)i * 7;
}

#define STEP(a, b)                                                                                 \
	__attribute__((noinline)) static void a(void)                                              \
	{                                                                                          \
		b();                                                                               \
		sink++;                                                                            \
	}
STEP(fp_c4, fp_spin)
STEP(fp_c3, fp_c4)
STEP(fp_c2, fp_c3)
STEP(fp_c1, fp_c2)

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 10);

	while (time(NULL) < end)
		fp_c1();
	return 0;
}
