#pragma once
// Functions that the kernels run and host tests check on the CPU: compiled for both by nvcc,
// plain inline C++ elsewhere.

#if defined(__CUDACC__)
#define WEFT_HOST_DEVICE __host__ __device__ __forceinline__
#define WEFT_UNROLL _Pragma("unroll")
#else
#define WEFT_HOST_DEVICE inline
#define WEFT_UNROLL
#endif
