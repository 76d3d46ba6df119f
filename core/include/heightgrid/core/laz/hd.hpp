#pragma once
// Qualifiers of the LAZ codec's building blocks, which compile as host code under g++/clang++
// (the host tests run the codec on machines without a GPU) and as host + device code under nvcc.

#if defined(__CUDACC__)
#define HG_LAZ_HD __host__ __device__
#define HG_LAZ_HD_INLINE __host__ __device__ __forceinline__
#else
#define HG_LAZ_HD
#define HG_LAZ_HD_INLINE inline
#endif
