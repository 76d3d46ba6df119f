#pragma once
// Qualifiers of the LAZ codec's building blocks, which compile as host code under g++/clang++
// (the host tests run the codec on machines without a GPU) and as host + device code under nvcc.

// HG_LAZ_HD_INLINE: small helpers, inlined everywhere. HG_LAZ_HD_HOT: the hot path, a chain of
// these calls per field (the symbol and bit decoders). HG_LAZ_HD_COLD: what runs once in many
// symbols (a model's update). HG_LAZ_HD_CALL: the integer decompressor.
// On the device HOT, COLD and CALL are each one out-of-line function: inlined at every call site
// they made both kernels far larger than a multiprocessor's instruction cache, and warps at
// different points of their chunks then waited for instruction fetches (docs/benchmarks.md, "The
// LAZ kernels' machine code": the sizes, the stalls and the variants measured).
// On the CPU these are chosen rather than left to GCC, whose own choice costs more instructions a
// point (docs/benchmarks.md, "One LAZ codec for the CPU and the GPU").
#if defined(__CUDACC__)
#define HG_LAZ_HD __host__ __device__
#define HG_LAZ_HD_INLINE __host__ __device__ __forceinline__
#define HG_LAZ_HD_HOT __host__ __device__ __noinline__
#define HG_LAZ_HD_COLD __host__ __device__ __noinline__
#define HG_LAZ_HD_CALL __host__ __device__ __noinline__
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
