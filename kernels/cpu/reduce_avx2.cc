#define KERNEL_NS avx2
#include "kernels/cpu/reduce_impl.inc"
