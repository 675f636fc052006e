// Compile-check stub of cuBLAS for machines with nvcc but no cuBLAS (this project's CPU machines):
// declarations of exactly what src/ calls, enum values as in the real header, no definitions.
// Used only by test/engine/cuda-build.test.ts (nvcc -c, never linked); the real build
// (native/cuda/build.sh) uses the toolkit's or the wheel's cublas_v2.h.
#pragma once
#include <cuda_runtime.h>
#include <library_types.h>

typedef struct cublasContext* cublasHandle_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0 } cublasMath_t;

const char* cublasGetStatusString(cublasStatus_t);
cublasStatus_t cublasCreate(cublasHandle_t*);
cublasStatus_t cublasDestroy(cublasHandle_t);
cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t);
cublasStatus_t cublasSetWorkspace(cublasHandle_t, void*, size_t);
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t);
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
