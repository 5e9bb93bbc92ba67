#pragma once
// Functions that the kernels run and host tests check on the CPU: compiled for both by nvcc,
// plain inline C++ elsewhere (WEFT_HOST_DEVICE). WEFT_KERNEL_CODE marks the loops written for any
// block type (src/device/kernel_block.h): device code only under nvcc, where the GPU's block has
// only device functions; plain inline C++ in a host build, where unit tests run them.

#if defined(__CUDACC__)
#define WEFT_HOST_DEVICE __host__ __device__ __forceinline__
#define WEFT_KERNEL_CODE __device__ __forceinline__
#define WEFT_UNROLL _Pragma("unroll")
#else
#define WEFT_HOST_DEVICE inline
#define WEFT_KERNEL_CODE inline
#define WEFT_UNROLL
#endif
