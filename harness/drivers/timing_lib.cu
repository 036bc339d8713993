// Harness-owned timing library of the plan runner's timed tasks (drivers/gpu_runner.cpp,
// `timed`): CUB's DeviceScan as the reference a submission is timed against, and the
// harness kernels that make a repetition's fresh input and hash what a buffer holds.
// No student code is compiled here or linked with it.
//
//   nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC [-gencode ...] -o libscanlab_timing.so timing_lib.cu
//       (scanlab/gpu_plan.py build_timing_library: cached like the runner)
//
// The runner dlopens it and calls the extern "C" functions below, on the stream it
// owns (a CUstream is a cudaStream_t). The CUDA runtime linked in here (statically)
// attaches to the device's primary context, the one the runner made current, so CUB's
// kernels and the submission's run in the same context and on the same stream.
//
// The input of repetition r is word i = mix(seed_r + i) % (high + 1), seed_r =
// mix(seed ^ r * golden) (mix: SplitMix64's finaliser); the hash of a buffer of words
// w[0..count) is sum over i of mix(key ^ (i << 32 | w[i])) mod 2^64, position by
// position, so two buffers hash alike only if they agree word for word (bar a 2^-64
// accident), and the sum needs no order between blocks.

#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kMostBlocks = 4096;
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

__host__ __device__ __forceinline__ uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__global__ void fill_kernel(uint32_t* words, size_t count, uint64_t seed, uint32_t high) {
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        words[i] = uint32_t(mix(seed + i) % (uint64_t(high) + 1));
    }
}

__global__ void hash_kernel(const uint32_t* words, size_t count, uint64_t key, unsigned long long* sum) {
    __shared__ uint64_t partial[kThreads];
    uint64_t mine = 0;
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        mine += mix(key ^ ((uint64_t(i) << 32) | words[i]));
    }
    partial[threadIdx.x] = mine;
    __syncthreads();
    for (unsigned half = kThreads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(sum, static_cast<unsigned long long>(partial[0]));
}

unsigned blocksFor(size_t count) {
    const size_t wanted = (count + kThreads - 1) / kThreads;
    return unsigned(wanted < 1 ? 1 : wanted > kMostBlocks ? kMostBlocks : wanted);
}

}  // namespace

extern "C" {

// The interface version the runner checks before it calls anything else.
int scanlab_timing_version() { return 1; }

uint64_t scanlab_repetition_seed(uint64_t seed, uint32_t repetition) { return mix(seed ^ (repetition * kGolden)); }

// Bytes of temporary storage CUB's scan of n int32 words wants (the same for both kinds).
int scanlab_cub_temp_bytes(size_t n, size_t* bytes) {
    *bytes = 0;
    return int(cub::DeviceScan::ExclusiveSum(nullptr, *bytes, static_cast<const int*>(nullptr),
                                             static_cast<int*>(nullptr), n));
}

// CUB's exclusive (inclusive != 0: inclusive) sum of n int32 words, queued on `stream`.
int scanlab_cub_scan_i32(void* temp, size_t temp_bytes, const void* in, void* out, size_t n, int inclusive,
                         cudaStream_t stream) {
    const int* from = static_cast<const int*>(in);
    int* to = static_cast<int*>(out);
    return int(inclusive ? cub::DeviceScan::InclusiveSum(temp, temp_bytes, from, to, n, stream)
                         : cub::DeviceScan::ExclusiveSum(temp, temp_bytes, from, to, n, stream));
}

// Fills `count` words with repetition `repetition`'s input (values 0..high), queued on `stream`.
int scanlab_fill_u32(void* words, size_t count, uint64_t seed, uint32_t repetition, uint32_t high,
                     cudaStream_t stream) {
    fill_kernel<<<blocksFor(count), kThreads, 0, stream>>>(static_cast<uint32_t*>(words), count,
                                                          scanlab_repetition_seed(seed, repetition), high);
    return int(cudaGetLastError());
}

// Adds the hash of `count` words to the u64 at `sum` (device memory the caller zeroed), queued on `stream`.
int scanlab_hash_u32(const void* words, size_t count, uint64_t key, void* sum, cudaStream_t stream) {
    hash_kernel<<<blocksFor(count), kThreads, 0, stream>>>(static_cast<const uint32_t*>(words), count, key,
                                                          static_cast<unsigned long long*>(sum));
    return int(cudaGetLastError());
}

}  // extern "C"
