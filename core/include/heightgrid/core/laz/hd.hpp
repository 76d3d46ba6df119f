#pragma once
// Qualifiers of the LAZ codec's building blocks, which compile as host code under g++/clang++
// (the host tests run the codec on machines without a GPU) and as host + device code under nvcc.

// HG_LAZ_HD_INLINE and HG_LAZ_HD_HOT: the hot path, a chain of these calls per field (HOT: left to
// nvcc on the device, as the kernels were tuned). HG_LAZ_HD_COLD: what runs once in many symbols
// (a model's update). HG_LAZ_HD_CALL: inlined on the device, one out-of-line function on the CPU
// (the integer decompressor). On the CPU these are chosen rather than left to GCC, whose own choice
// costs more instructions a point (docs/benchmarks.md, "One LAZ codec for the CPU and the GPU").
#if defined(__CUDACC__)
#define HG_LAZ_HD __host__ __device__
#define HG_LAZ_HD_INLINE __host__ __device__ __forceinline__
#define HG_LAZ_HD_HOT __host__ __device__
#define HG_LAZ_HD_COLD __host__ __device__
#define HG_LAZ_HD_CALL __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define HG_LAZ_HD
#define HG_LAZ_HD_INLINE inline __attribute__((always_inline))
#define HG_LAZ_HD_HOT inline __attribute__((always_inline))
#define HG_LAZ_HD_COLD __attribute__((noinline))
#define HG_LAZ_HD_CALL __attribute__((noinline))
#else
#define HG_LAZ_HD
#define HG_LAZ_HD_INLINE inline
#define HG_LAZ_HD_HOT inline
#define HG_LAZ_HD_COLD
#define HG_LAZ_HD_CALL inline
#endif
