// int8 GEMM for AVX2 hosts with AVX-VNNI (built with -mavx2 -mfma -mavxvnni): qgemm_avx2.inc.
#define EE_Q8_NS avxvnni
#define EE_Q8_NAME "avxvnni"
#define EE_AVXVNNI 1
#include "cpu/qgemm_avx2.inc"
