// int8 GEMM for AVX2 hosts without VNNI (built with -mavx2 -mfma): qgemm_avx2.inc.
#define EE_Q8_NS avx2
#define EE_Q8_NAME "avx2"
#include "cpu/qgemm_avx2.inc"
