#define KERNEL_NS avx512
#include "kernels/cpu/reduce_impl.inc"
