/* Host stubs of "kernels": what nvcc emits for a __global__ function is a
 * host function with the kernel's mangled name, whose address
 * cudaLaunchKernel receives.  The asm label gives it the C++ name of
 * vectorAdd(const float *, const float *, float *, int). */
void vector_add_stub(const float *a, const float *b, float *c, int n) __asm__("_Z9vectorAddPKfS0_Pfi");

void vector_add_stub(const float *a, const float *b, float *c, int n)
{
	(void)a, (void)b, (void)c, (void)n;
}
