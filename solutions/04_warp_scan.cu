// A05 stretch drill 04, the kernel file: a block scan built on warp shuffles, at 32 and 64 lanes.
//
// Inside a group of W lanes, Hillis-Steele whose every step is a shuffle: lane l takes
// lane l - delta's value straight out of its registers, so the log2(W) steps need no
// shared memory and no barrier. Across the groups, one shared word per group: each
// group's total, one barrier, group 0 scans the totals with the same W-lane scan, one
// barrier, every lane adds the groups before its own. Written against Lanes<W>, never
// a literal warp size: W = 32 is the hardware warp (__shfl_up_sync); W = 64 is two
// warps posing as an AMD CDNA wavefront, up() through shared memory.
//
// Yours, the TODO region (it calls only what is above it):
//   TODO 1  warp_inclusive_scan: the W-lane inclusive scan, log2(W) shuffle steps (about 5 lines)
//   TODO 2  block_scan: the group totals, scanned by group 0, added back (about 15 lines)
// Untouched, lanes 0 and 1 of group 0 are right and nothing else; a lane map under
// each table shows which lanes are wrong, and the last line names the TODO to look at.
// The checks, the watchdog, the Lab 1 tile scans it is timed against and main are the
// bench program, which #includes this file (the grader compiles its device code only:
// keep the names and signatures). From exercises/:
//   make stretch     or: nvcc -std=c++17 -O3 -arch=sm_90 -o 04_warp_scan bench/04_warp_scan_bench.cu
//   ../build/exercises/cuda/04_warp_scan      (--width 32|64|both, --n N, --seed S, --help)
// Another kernel file: -DSUBMISSION='"path/to/file.cu"'. The answer,
// solutions/04_warp_scan.cu, is identical outside the TODO region.

#include <cuda_runtime.h>
#include <cuda/barrier>

#include <cstddef>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
#error "04_warp_scan needs sm_70 or newer: __shfl_up_sync and cuda::barrier"
#endif

constexpr int kNvidiaWarp = 32;     // every NVIDIA GPU so far; the lane groups below are built on it
constexpr int kMaxThreads = 1024;   // the largest block, and so the most groups a block can hold

// ---- GPU: the lane groups ----------------------------------------------------
//
// Your code sees a lane group only through this interface, the whole of it:
//   L::width              lanes in a group (a compile-time constant)
//   lanes.lane()          this thread's lane in its group, 0 .. width - 1
//   lanes.group()         this thread's group in the block, 0 .. groups() - 1
//   lanes.groups()        groups in the block, blockDim.x / width
//   lanes.up(v, delta)    the v that lane lane() - delta of the same group passed in;
//                         a lane below delta gets its own v back
// up() is a collective, as a shuffle is: every lane of the group calls it, each time
// with the same delta. A lane that skips a call (an up() inside `if (lane >= delta)`)
// leaves the hardware shuffle undefined and the 64-lane group waiting forever; the
// watchdog then ends the program after 60 s and says so.

template <int kWidth>
struct Lanes;  // only the two widths below exist

// The hardware warp. A shuffle reads every lane's register before any lane writes
// its own, so the steps of a scan built on it have nothing to race on.
template <>
struct Lanes<kNvidiaWarp> {
    static constexpr int width = kNvidiaWarp;

    __device__ static Lanes open() { return {}; }
    __device__ int lane() const { return int(threadIdx.x % width); }
    __device__ int group() const { return int(threadIdx.x / width); }
    __device__ int groups() const { return int(blockDim.x / width); }

    template <class T>
    __device__ T up(T v, int delta) const {
        return __shfl_up_sync(0xffffffffu, v, unsigned(delta));
    }
};

// Two warps posing as one 64-lane group. up() stores every lane's value in a slot
// of shared memory and reads the slot delta below; the two warps are scheduled
// independently, so a barrier that only they use separates the stores from the
// loads, and a second one keeps the next up()'s stores from overwriting a slot the
// partner warp has not read yet. Slots: 64 per group, one array per value type.
// (An AMD wavefront does this in one instruction, in lockstep; here it is a store,
// two barriers and a load. Correct semantics, none of the speed.)
template <>
struct Lanes<2 * kNvidiaWarp> {
    static constexpr int width = 2 * kNvidiaWarp;
    static constexpr int kMaxGroups = kMaxThreads / width;
    using PairBarrier = cuda::barrier<cuda::thread_scope_block>;

    PairBarrier* pair;  // this thread's group's barrier

    // Every thread of the block calls this once, before any up(): the barriers are
    // set up by the first lane of each group and published by __syncthreads().
    __device__ static Lanes open() {
        __shared__ alignas(PairBarrier) unsigned char storage[kMaxGroups * sizeof(PairBarrier)];
        PairBarrier* const barriers = reinterpret_cast<PairBarrier*>(storage);
        const unsigned int g = threadIdx.x / width;
        if (threadIdx.x % width == 0) init(&barriers[g], width);  // 64 arrivals complete a phase
        __syncthreads();
        return {&barriers[g]};
    }
    __device__ int lane() const { return int(threadIdx.x % width); }
    __device__ int group() const { return int(threadIdx.x / width); }
    __device__ int groups() const { return int(blockDim.x / width); }

    template <class T>
    __device__ T up(T v, int delta) const {
        __shared__ T slots[kMaxThreads];  // this group's are slots[group() * width ...]
        T* const mine = slots + group() * width;
        pair->arrive_and_wait();  // both warps have read the previous up()'s slots
        mine[lane()] = v;
        pair->arrive_and_wait();  // every lane's value is in its slot
        const int from = lane() - delta;
        return from >= 0 ? mine[from] : v;
    }
};

// ---- GPU: your code ------------------------------------------------------------

// What block_scan hands back to every thread: its element's inclusive and
// exclusive prefix within the tile.
template <class T>
struct Prefix {
    T inclusive;
    T exclusive;
};

// ==== TODO region begins ======================================================
//
// Rules: no literal warp size (use L::width and lanes.*); every lane of a group
// calls every up() (the identity 0 stands in for a lane with nothing to add);
// and every thread of the block reaches every __syncthreads(), so no barrier
// inside an `if` that some threads skip.

// TODO 1 (reference answer). Hillis-Steele across the lanes of one group, the
// partial sums held in registers: at the step with offset delta, every lane
// fetches the sum of the lane delta below it and lanes from delta up add it on.
// After the step with delta, lane l holds the sum of lanes max(0, l - 2 delta + 1)
// .. l, so log2(width) steps cover the group. All lanes call up(), including the
// lanes below delta that ignore what it returns: it is a collective.
template <class L, class T>
__device__ T warp_inclusive_scan(const L& lanes, T x) {
    for (int delta = 1; delta < L::width; delta *= 2) {
        const T below = lanes.up(x, delta);
        if (lanes.lane() >= delta) x += below;
    }
    return x;
}

// TODO 2 (reference answer). Scan inside every group; the last lane's inclusive
// value is the group's total, and it goes to group_totals[group]. One barrier, so
// group 0 sees every total. Group 0, all of it (its up() calls need every lane),
// scans the totals in place: at most kMaxThreads / width of them, never more than
// width (32 at W = 32, 16 at W = 64), and lanes past the last group scan a 0.
// A second barrier, so every group sees the scanned totals; the total of every
// group before mine, group_totals[group - 1], is added to both results. The
// exclusive value within the group is the inclusive value of the lane below,
// fetched with one more up(); lane 0 has nothing below it and takes the identity.
template <class L, class T>
__device__ Prefix<T> block_scan(const L& lanes, T x, T* group_totals) {
    const T in_group = warp_inclusive_scan(lanes, x);
    if (lanes.lane() == L::width - 1) group_totals[lanes.group()] = in_group;
    __syncthreads();

    if (lanes.group() == 0) {
        const bool has_total = lanes.lane() < lanes.groups();
        const T total = has_total ? group_totals[lanes.lane()] : T(0);
        const T scanned = warp_inclusive_scan(lanes, total);
        if (has_total) group_totals[lanes.lane()] = scanned;  // each lane its own slot: no race
    }
    __syncthreads();

    const T before_group = lanes.group() > 0 ? group_totals[lanes.group() - 1] : T(0);
    const T below = lanes.up(in_group, 1);
    const T before_lane = lanes.lane() > 0 ? below : T(0);
    return {before_group + in_group, before_group + before_lane};
}

// ==== TODO region ends ========================================================

// ---- GPU kernels ---------------------------------------------------------------
//
// One tile per block, one element per thread. Lanes past the end of the array load
// 0, the identity for +, so a partial last tile needs no special case; every bounds
// check guards data, never a barrier.

// The drill's kernel: your block_scan on lane groups of kWidth.
template <int kWidth, bool kInclusive, class T>
__global__ void warp_scan_tile(const T* __restrict__ in, T* __restrict__ out, size_t n) {
    static_assert(kMaxThreads / kWidth <= kWidth, "group 0 scans every group's total in one pass");
    __shared__ T group_totals[kMaxThreads / kWidth];
    const Lanes<kWidth> lanes = Lanes<kWidth>::open();
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const T x = i < n ? in[i] : T(0);
    const Prefix<T> prefix = block_scan(lanes, x, group_totals);
    if (i < n) out[i] = kInclusive ? prefix.inclusive : prefix.exclusive;
}
