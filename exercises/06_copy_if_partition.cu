// A05 stretch drill 06, the kernel file: partition's scatter, on copy_if's one scan.
//
// copy_if keeps the elements a predicate accepts: flags[i] = pred(in[i]) ? 1 : 0, one
// exclusive scan of the flags gives offsets, and a kept in[i] goes to out[offsets[i]]
// (scatter_kept, given). partition uses the very same flags and offsets: the kept
// elements at the front in input order, the rejected ones at the back in REVERSED
// input order, out[n - 1] the first rejected element (CUB's DevicePartition::If
// promises the same):
//   x > 0 on   3 -1 4 -5 9 -2 6 -8   gives   3 4 9 6 | -8 -2 -5 -1
//
// Yours: partition_scatter, between the TODO markers (about 2 lines). The starter
// fills the back part forwards from out[kept]: a partition, but not the documented
// one, so copy_if passes every row and partition's back part fails in (nearly) every
// row with two or more rejected elements; the table gives the first wrong slot. The
// element types, the predicates, mark, the scan, the checks, the timing and main are
// the bench program, which #includes this file (keep the kernels' names and
// signatures: the grader compiles this file's device code only). From exercises/:
//   make stretch     or: nvcc -std=c++17 -O3 -arch=sm_90 -o 06_copy_if_partition bench/06_copy_if_partition_bench.cu
//   ../build/exercises/cuda/06_copy_if_partition      (--n N, --seed S, --help)
// Another kernel file: -DSUBMISSION='"path/to/file.cu"'. The answer,
// solutions/06_copy_if_partition.cu, is identical outside the TODO markers.

#include <cuda_runtime.h>

#include <cstddef>

// ---- GPU kernels: the scatters ---------------------------------------------------
//
// One element per thread; the guard is on data. flags and offsets come from the one scan.

// copy_if's scatter, the worked example: a kept element's slot is the number of
// kept elements before it.
template <typename T>
__global__ void scatter_kept(const T* __restrict__ in, const unsigned int* __restrict__ flags,
                             const unsigned int* __restrict__ offsets, T* __restrict__ out, size_t n) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n && flags[i]) out[offsets[i]] = in[i];
}

// partition's scatter: every element is written exactly once, so out[0 .. n) ends
// up holding the kept elements in input order, then the rejected ones in REVERSED
// input order (the header has the whole contract and an example). The inputs are
// the same as copy_if's: flags and offsets from the one scan, nothing else.
template <typename T>
__global__ void partition_scatter(const T* __restrict__ in, const unsigned int* __restrict__ flags,
                                  const unsigned int* __restrict__ offsets, T* __restrict__ out, size_t n) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    // ---- TODO begin ---------------------------------------------------------------
    // Write in[i] to its slot (about 2 lines). A kept element goes where copy_if puts
    // it. A rejected one goes to the back part, out[kept .. n), in the documented
    // order: REVERSED input order, so the first rejected element lands in out[n - 1].
    // Of the i elements before this one, offsets[i] were kept: how many were
    // rejected? The attempt below runs, and fills the back part forwards from
    // out[kept]; run it and read the table before you change it.
    const unsigned int kept = offsets[n - 1] + flags[n - 1];  // the total, as in Lab 2
    const size_t rejected_before = i - offsets[i];
    out[flags[i] ? size_t(offsets[i]) : kept + rejected_before] = in[i];
    // ---- TODO end -----------------------------------------------------------------
}
