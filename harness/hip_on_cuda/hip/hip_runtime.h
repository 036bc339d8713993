// harness/hip_on_cuda/hip/hip_runtime.h: just enough HIP on top of the CUDA runtime
// to build scan-lab's HIP programs with nvcc and run them on an NVIDIA GPU.
//
//   nvcc -std=c++17 -O3 -arch=sm_90 -I harness/hip_on_cuda -x cu -o scan a05-scan/hip/scan.cpp
//
// With `-I harness/hip_on_cuda`, the programs' `#include <hip/hip_runtime.h>` finds this
// file instead of ROCm's. It is the project's own, written for a05-scan/hip/*.cpp and
// the stretch drills' HIP ports (exercises/ and solutions/ *_hip.cpp): it maps the HIP
// API those programs call, one name at a time, onto the CUDA runtime API with the same
// meaning, plus the types those calls are declared with, and nothing else. (HIP itself ships an NVIDIA
// back end, but Debian's HIP 5.2 copy of it does not compile against CUDA 13.) A
// program that needs a HIP call missing here fails to compile, naming the call: add
// it here, mapped to its CUDA twin, when a lesson starts using it.
//
// Device code needs one mapping (the warp shuffle, at the end of this file; where a
// drill needs more, it tests SCANLAB_HIP_ON_CUDA and spells the CUDA form itself):
// __global__, __shared__ (extern, dynamically sized), __syncthreads,
// threadIdx/blockIdx/blockDim, warpSize, float4/uint4 and the <<<>>> launch are
// spelled the same in HIP and CUDA. warpSize is the hardware's: 32 on NVIDIA, so
// code run through this header never runs with a 64-lane wavefront.
//
// The harness uses it to run the HIP programs with the CUDA programs' inputs and
// compare their tables line for line (harness/test_a05_hip.py).

#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>

// What a real HIP install defines when it targets NVIDIA, and a name of our own in
// case a program ever needs to know it is running through this header.
#ifndef __HIP_PLATFORM_NVIDIA__
#define __HIP_PLATFORM_NVIDIA__ 1
#endif
#define SCANLAB_HIP_ON_CUDA 1

// ---- errors --------------------------------------------------------------------
//
// HIP's error codes were numbered after CUDA's, so the pairs below also agree in
// value. hipErrorNoBinaryForGpu is CUDA's "no kernel image is available for execution
// on the device".

using hipError_t = cudaError_t;

inline constexpr hipError_t hipSuccess = cudaSuccess;
inline constexpr hipError_t hipErrorNoDevice = cudaErrorNoDevice;
inline constexpr hipError_t hipErrorInsufficientDriver = cudaErrorInsufficientDriver;
inline constexpr hipError_t hipErrorNoBinaryForGpu = cudaErrorNoKernelImageForDevice;

// The names come back in CUDA's spelling (cudaErrorNoDevice, ...): the truth about
// which runtime answered.
inline const char* hipGetErrorName(hipError_t err) { return cudaGetErrorName(err); }
inline const char* hipGetErrorString(hipError_t err) { return cudaGetErrorString(err); }
inline hipError_t hipGetLastError() { return cudaGetLastError(); }

// ---- device ----------------------------------------------------------------------

// HIP's device properties share most field names with CUDA's. The two the programs
// read that CUDA spells differently are added: gcnArchName holds the GPU's target,
// "sm_90" here where an AMD GPU says "gfx942:sramecc+:xnack-", and
// maxSharedMemoryPerMultiProcessor is CUDA's sharedMemPerMultiprocessor.
struct hipDeviceProp_t : cudaDeviceProp {
    char gcnArchName[256];
    size_t maxSharedMemoryPerMultiProcessor;
};

inline hipError_t hipGetDeviceCount(int* count) { return cudaGetDeviceCount(count); }
inline hipError_t hipSetDevice(int device) { return cudaSetDevice(device); }
inline hipError_t hipDeviceSynchronize() { return cudaDeviceSynchronize(); }

inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int device) {
    const hipError_t err = cudaGetDeviceProperties(prop, device);  // fills the cudaDeviceProp part
    if (err != cudaSuccess) return err;
    std::snprintf(prop->gcnArchName, sizeof prop->gcnArchName, "sm_%d%d", prop->major, prop->minor);
    prop->maxSharedMemoryPerMultiProcessor = prop->sharedMemPerMultiprocessor;
    return cudaSuccess;
}

using hipFuncAttributes = cudaFuncAttributes;

inline hipError_t hipFuncGetAttributes(hipFuncAttributes* attr, const void* kernel) {
    return cudaFuncGetAttributes(attr, kernel);
}

// ---- memory ------------------------------------------------------------------------

using hipMemcpyKind = cudaMemcpyKind;
using hipStream_t = cudaStream_t;

inline constexpr hipMemcpyKind hipMemcpyHostToDevice = cudaMemcpyHostToDevice;
inline constexpr hipMemcpyKind hipMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
inline constexpr hipMemcpyKind hipMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;

// HIP, like CUDA, takes a typed pointer's address in C++ (hipMalloc(&d_in, bytes)).
inline hipError_t hipMalloc(void** ptr, size_t bytes) { return cudaMalloc(ptr, bytes); }
template <typename T>
inline hipError_t hipMalloc(T** ptr, size_t bytes) {
    return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
inline hipError_t hipFree(void* ptr) { return cudaFree(ptr); }

inline hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
    return cudaMemcpy(dst, src, bytes, kind);
}
inline hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind,
                                 hipStream_t stream = nullptr) {
    return cudaMemcpyAsync(dst, src, bytes, kind, stream);
}
inline hipError_t hipMemset(void* ptr, int value, size_t bytes) { return cudaMemset(ptr, value, bytes); }

// A __device__ variable, set from the host. HIP_SYMBOL(x) names the variable for the
// copy, as it does in HIP; CUDA takes the variable itself.
#define HIP_SYMBOL(symbol) symbol
template <typename T>
inline hipError_t hipMemcpyToSymbol(const T& symbol, const void* src, size_t bytes, size_t offset = 0,
                                    hipMemcpyKind kind = hipMemcpyHostToDevice) {
    return cudaMemcpyToSymbol(symbol, src, bytes, offset, kind);
}

// ---- events ----------------------------------------------------------------------

using hipEvent_t = cudaEvent_t;

inline hipError_t hipEventCreate(hipEvent_t* event) { return cudaEventCreate(event); }
inline hipError_t hipEventDestroy(hipEvent_t event) { return cudaEventDestroy(event); }
inline hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream = nullptr) {
    return cudaEventRecord(event, stream);
}
inline hipError_t hipEventSynchronize(hipEvent_t event) { return cudaEventSynchronize(event); }
inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
    return cudaEventElapsedTime(ms, start, stop);
}

// ---- warp shuffles -----------------------------------------------------------------
//
// HIP's __shfl_up(var, delta[, width]) has every lane of the wavefront take part and
// takes no lane mask; CUDA (since Volta's independent thread scheduling) wants the mask
// of participating lanes. All 32 lanes take part wherever the programs shuffle, so the
// full mask is the faithful translation. CUDA still declares a deprecated, maskless
// __shfl_up that sm_70 and newer refuse, so this must be a macro, defined after CUDA's
// headers, rather than an overload.
#define __shfl_up(var, ...) __shfl_up_sync(0xffffffffu, (var), __VA_ARGS__)
