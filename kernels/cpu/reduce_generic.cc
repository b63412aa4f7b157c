#define KERNEL_NS generic
#include "kernels/cpu/reduce_impl.inc"
