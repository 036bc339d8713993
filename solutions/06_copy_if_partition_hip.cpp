// A05 stretch drill 06 in HIP, the kernel file: partition's scatter, on copy_if's one scan.
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
// signatures). From exercises/:
//   make stretch-hip    (hipcc ... bench/06_copy_if_partition_bench_hip.cpp; its header: the nvcc line)
//   ../build/exercises/hip/06_copy_if_partition      (--n N, --seed S, --help)
// Another kernel file: -DSUBMISSION='"path/to/file.cpp"'. The answer,
// solutions/06_copy_if_partition_hip.cpp, is identical outside the TODO markers.

#include <hip/hip_runtime.h>

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
    // Of the i elements before this one, offsets[i] were kept and the rest rejected.
    // A rejected element takes the slot that many steps in from the far end, so the
    // first rejected element lands in out[n - 1] and the last in out[kept]. Nothing
    // here needs the kept total, which is why one scan serves both algorithms (and
    // why a single-pass scan could scatter a tile before later tiles are done).
    const size_t rejected_before = i - offsets[i];
    out[flags[i] ? size_t(offsets[i]) : n - 1 - rejected_before] = in[i];
    // ---- TODO end -----------------------------------------------------------------
}
