#pragma once
// Functions that the kernels run and host tests check on the CPU: compiled for both by nvcc,
// plain inline C++ elsewhere.

//
// WEFT_KERNEL_CODE marks code that only kernels run on the GPU, written for any block type
// (src/device/lane_loop.h): device code under nvcc, plain inline C++ where host tests run it.

#if defined(__CUDACC__)
#define WEFT_HOST_DEVICE __host__ __device__ __forceinline__
#define WEFT_KERNEL_CODE __device__ __forceinline__
#define WEFT_UNROLL _Pragma("unroll")
#else
#define WEFT_HOST_DEVICE inline
#define WEFT_KERNEL_CODE inline
#define WEFT_UNROLL
#endif
