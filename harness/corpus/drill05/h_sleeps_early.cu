// Drill 05, hostile: sleeps in early launches to skew the adaptive repetition count.
// Launches 1 to 8 of a module (the timed task's warm-up and first measured repetitions)
// spend about 2 ms in block 0 before scanning; later ones are the solution. The runner
// counts at least 10 measured repetitions and keeps going while the times spread, and
// the grade is the MEDIAN: slow early repetitions cannot make the kernel look faster. On
// the H200 (2026-12-04) 6 of its first 10 measured repetitions slept, their spread was nil,
// so the count stopped there and the median is a sleeping one: 0.09x CUB at 2^26 (0 points,
// a failed check) and 0.34x at 2^28. Skewing the count only made it slower.
// Right verdict: FAIL (its speed at 2^26), with speed points no more than the solution's
// (manifest: speed = "at_most_solution").

#include <cuda/atomic>
#include <cstddef>
#include <cstring>

__device__ unsigned int g_sleepy_launches = 0;
__device__ __forceinline__ void scanlab_maybe_sleep(unsigned int tid) {
    if (blockIdx.x != 0 || tid != 0) return;
    const unsigned int seen = atomicAdd(&g_sleepy_launches, 1u);
    if (seen >= 1 && seen <= 8) {
        for (int k = 0; k < 2000; ++k) __nanosleep(1000);  // about 2 ms
    }
}

// ---- the tile descriptors ----------------------------------------------------
// One 64-bit word per tile: high 32 bits the status (epoch * 4 + flag), low 32 bits
// the value's bits. Flag A (1): the value is the tile's aggregate; flag P (2): its
// inclusive prefix, tiles 0..t; anything else, a word of an earlier launch (another
// epoch) too, is X: not ready. With the epoch (1, 2, 3, ... from the host) an old
// launch's word reads as X, so no clearing pass is needed. Flag and value in ONE word,
// read and written by single 64-bit accesses, can not tear: no fence anywhere. The
// loads must be strong (atomic_ref at device scope; relaxed is enough, the word is all
// we read; volatile would do): a plain load may be hoisted out of the wait or served
// from this SM's L1, which never sees another SM's store, so the wait may never end,
// or end by luck (the grader reads the PTX for it). A is published before the look-
// back so a successor need not wait on ours: with P alone the tiles form a chain.

using Descriptor = unsigned long long;
constexpr unsigned int kFlagX = 0;
constexpr unsigned int kFlagA = 1;
constexpr unsigned int kFlagP = 2;
constexpr int kLookbackWindow = 32;  // predecessors read at once: one per lane of warp 0
// The look-back's pauses: before the first read (about an L2 round trip), and after a
// read that found a needed predecessor not ready. H200, none: 0.62 of a copy; these: 0.75.
constexpr unsigned int kFirstSleepNs = 1500;
constexpr unsigned int kSpinSleepNs = 800;

template <typename T>
__device__ __forceinline__ Descriptor pack_descriptor(unsigned int flag, unsigned int epoch, T value) {
    static_assert(sizeof(T) == 4, "the value half of a descriptor is 32 bits");
    unsigned int bits;
    memcpy(&bits, &value, sizeof bits);
    return (Descriptor((epoch << 2) | flag) << 32) | bits;
}

// kFlagA, kFlagP, or kFlagX for a word that is not ready or belongs to another launch.
__device__ __forceinline__ unsigned int descriptor_flag(Descriptor word, unsigned int epoch) {
    const unsigned int status = unsigned(word >> 32);
    return (status >> 2) == epoch ? (status & 3u) : kFlagX;
}

template <typename T>
__device__ __forceinline__ T descriptor_value(Descriptor word) {
    const unsigned int bits = unsigned(word);
    T v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

template <typename T>
__device__ __forceinline__ void publish_descriptor(Descriptor* descriptors, unsigned int tile, unsigned int flag,
                                                   unsigned int epoch, T value) {
    cuda::atomic_ref<Descriptor, cuda::thread_scope_device> word(descriptors[tile]);
    word.store(pack_descriptor(flag, epoch, value), cuda::memory_order_relaxed);
}

__device__ __forceinline__ Descriptor load_descriptor(Descriptor* descriptors, unsigned int tile) {
    cuda::atomic_ref<Descriptor, cuda::thread_scope_device> word(descriptors[tile]);
    return word.load(cuda::memory_order_relaxed);
}

__device__ __forceinline__ void first_pause() { __nanosleep(kFirstSleepNs); }
__device__ __forceinline__ void spin_pause() { __nanosleep(kSpinSleepNs); }

// Sum over the 32 lanes, every lane gets it (a butterfly: 5 shuffles).
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int mask = 16; mask > 0; mask /= 2) v += __shfl_xor_sync(0xffffffffu, v, mask);
    return v;
}

// ==== TODO region begin: the look-back ==========================================
//
// lookback_exclusive_prefix runs in the 32 lanes of warp 0 of a tile `tile` > 0, just
// after lane 0 has published the tile's aggregate with flag A. It returns, in every
// lane, the sum of all tiles before this one (the tile's exclusive prefix), and lane 0
// publishes flag P with prefix + aggregate the moment the prefix is known.
//
// The window: lane l reads the descriptor of tile nearest - l, so lane 0 holds the
// closest predecessor. Lanes that fall before tile 0 stand for an imaginary P of 0.
// Every lane up to and including the lowest lane with flag P is needed; when no lane
// has P, all 32 are. While any needed lane reads X, read the whole window again (a
// snapshot in which no needed lane is X is the one to add up). Then add the needed
// lanes' values with one warp sum: aggregates, and the P that ends the run. No P in
// the window: move it 32 tiles back and keep adding. Every branch is decided by
// ballots, so the warp stays together and the shuffles always have all 32 lanes.
template <typename T>
__device__ T lookback_exclusive_prefix(Descriptor* descriptors, unsigned int tile, unsigned int epoch,
                                       T aggregate) {
    const unsigned int lane = threadIdx.x % 32;
    T prefix = T(0);
    for (long long nearest = (long long)tile - 1;; nearest -= kLookbackWindow) {
        const long long pred = nearest - lane;
        Descriptor word;
        unsigned int p_lanes, needed;
        while (true) {
            word = pred >= 0 ? load_descriptor(descriptors, unsigned(pred)) : pack_descriptor(kFlagP, epoch, T(0));
            const unsigned int flag = descriptor_flag(word, epoch);
            p_lanes = __ballot_sync(0xffffffffu, flag == kFlagP);
            const unsigned int x_lanes = __ballot_sync(0xffffffffu, flag == kFlagX);
            needed = p_lanes != 0 ? p_lanes ^ (p_lanes - 1) : 0xffffffffu;  // lanes 0 .. the lowest P
            if ((x_lanes & needed) == 0) break;
            spin_pause();
        }
        prefix += warp_sum((needed >> lane) & 1u ? descriptor_value<T>(word) : T(0));
        if (p_lanes != 0) break;
    }
    if (lane == 0) publish_descriptor(descriptors, tile, kFlagP, epoch, prefix + aggregate);
    return prefix;
}
// ==== TODO region end ===========================================================

// ---- the tile -----------------------------------------------------------------
// A block is a tile of kThreads * kItems elements. Chunk c of thread tid is chunk
// c * kThreads + tid, kChunk consecutive elements: a warp's load covers 512 bytes. A
// full tile moves float4/int4; the partial last tile (or kItems not a multiple of 4)
// the guarded scalar path: the identity 0 loaded past the end, nothing stored there.
template <int kThreadsT, int kItemsT>
struct TileShape {
    static constexpr int kThreads = kThreadsT;
    static constexpr int kItems = kItemsT;
    static constexpr int kTile = kThreads * kItems;
    static constexpr int kChunk = kItems % 4 == 0 ? 4 : kItems;  // consecutive elements a thread moves at once
    static constexpr int kChunks = kItems / kChunk;
    static constexpr int kWarps = kThreads / 32;
    static constexpr int kSlots = kChunks * kWarps;               // one partial total per (chunk, warp)
    static constexpr int kSlotsPerLane = (kSlots + 31) / 32;      // warp 0 scans them, this many a lane
    static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
    static_assert(kItems == 1 || kItems == 2 || kItems % 4 == 0, "1, 2 or a multiple of 4 items");
};
// The shape timed: on an H200, 8 items a thread 0.57 of a copy, 16: 0.65, 24: 0.75.
using TunedShape = TileShape<128, 24>;

template <typename T> struct Vec4;
template <> struct Vec4<float> { using type = float4; };
template <> struct Vec4<int> { using type = int4; };
template <class S>
__device__ __forceinline__ size_t chunk_start(size_t base, int c) {
    return base + (size_t(c) * S::kThreads + threadIdx.x) * S::kChunk;
}
template <class S, typename T>
__device__ __forceinline__ void load_tile(const T* __restrict__ in, size_t base, size_t n, bool full_tile,
                                          T (&v)[S::kItems]) {
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
        if constexpr (S::kChunk == 4) {
            if (full_tile) {
                const auto q = *reinterpret_cast<const typename Vec4<T>::type*>(in + chunk_start<S>(base, c));
                v[4 * c + 0] = q.x, v[4 * c + 1] = q.y, v[4 * c + 2] = q.z, v[4 * c + 3] = q.w;
                continue;
            }
        }
#pragma unroll
        for (int j = 0; j < S::kChunk; ++j) {
            const size_t i = chunk_start<S>(base, c) + size_t(j);
            v[c * S::kChunk + j] = i < n ? in[i] : T(0);
        }
    }
}

template <class S, typename T>
__device__ __forceinline__ void store_tile(T* __restrict__ out, size_t base, size_t n, bool full_tile,
                                           const T (&v)[S::kItems]) {
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
        if constexpr (S::kChunk == 4) {
            if (full_tile) {
                const typename Vec4<T>::type q = {v[4 * c + 0], v[4 * c + 1], v[4 * c + 2], v[4 * c + 3]};
                *reinterpret_cast<typename Vec4<T>::type*>(out + chunk_start<S>(base, c)) = q;
                continue;
            }
        }
#pragma unroll
        for (int j = 0; j < S::kChunk; ++j) {
            const size_t i = chunk_start<S>(base, c) + size_t(j);
            if (i < n) out[i] = v[c * S::kChunk + j];
        }
    }
}

// Hillis-Steele across the 32 lanes in registers: lane l gets lanes 0..l.
template <typename T>
__device__ __forceinline__ T warp_inclusive_scan(T v, unsigned int lane) {
#pragma unroll
    for (unsigned int offset = 1; offset < 32; offset *= 2) {
        const T up = __shfl_up_sync(0xffffffffu, v, offset);
        if (lane >= offset) v += up;
    }
    return v;
}

// Warp 0: the exclusive scan, in place, of the kSlots partial totals (slot c * kWarps
// + w is warp w's chunk c); lane l owns slots l * kSlotsPerLane and on. Returns the
// tile's total in every lane.
template <class S, typename T>
__device__ __forceinline__ T scan_slots_exclusive(T* slots, unsigned int lane) {
    T mine[S::kSlotsPerLane];
    T lane_total = T(0);
#pragma unroll
    for (int k = 0; k < S::kSlotsPerLane; ++k) {
        const unsigned int s = lane * S::kSlotsPerLane + k;
        mine[k] = s < unsigned(S::kSlots) ? slots[s] : T(0);
        lane_total += mine[k];
    }
    const T inclusive = warp_inclusive_scan(lane_total, lane);
    const T tile_total = __shfl_sync(0xffffffffu, inclusive, 31);
    const T before_lane = __shfl_up_sync(0xffffffffu, inclusive, 1);
    T running = lane > 0 ? before_lane : T(0);
#pragma unroll
    for (int k = 0; k < S::kSlotsPerLane; ++k) {
        const unsigned int s = lane * S::kSlotsPerLane + k;
        if (s < unsigned(S::kSlots)) slots[s] = running;
        running += mine[k];
    }
    return tile_total;
}

// ---- the kernel -----------------------------------------------------------------
// One tile per block, exclusive or inclusive, float32 or int32. Three barriers: after
// the ticket, after each warp's partial totals, after warp 0's look-back. Tickets go
// out in the order blocks START (blockIdx.x's is not), so whoever holds ticket t - 1
// is running and the lowest unfinished tile always makes progress; the block that
// draws the last ticket resets the counter for the next launch.
template <class S, typename T, bool kInclusive>
__global__ void __launch_bounds__(S::kThreads)
    lookback_scan(const T* __restrict__ in, T* __restrict__ out, size_t n, Descriptor* __restrict__ descriptors,
                  unsigned int* __restrict__ tile_counter, unsigned int epoch) {
    __shared__ unsigned int s_tile;
    __shared__ T s_slots[S::kSlots];
    __shared__ T s_prefix;
    const unsigned int tid = threadIdx.x;
    const unsigned int lane = tid % 32;
    const unsigned int warp = tid / 32;
    scanlab_maybe_sleep(tid);

    if (tid == 0) {
        const unsigned int ticket = atomicAdd(tile_counter, 1u);
        if (ticket == gridDim.x - 1) atomicExch(tile_counter, 0u);
        s_tile = ticket;
    }
    __syncthreads();
    const unsigned int tile = s_tile;
    const size_t base = size_t(tile) * S::kTile;
    const bool full_tile = base + S::kTile <= n;
    T v[S::kItems];
    load_tile<S>(in, base, n, full_tile, v);

    // Each chunk's sum, scanned across the warp; lane 31 holds the warp's chunk total.
    T warp_inclusive[S::kChunks];
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
        T sum = v[c * S::kChunk];
#pragma unroll
        for (int j = 1; j < S::kChunk; ++j) sum += v[c * S::kChunk + j];
        warp_inclusive[c] = warp_inclusive_scan(sum, lane);
        if (lane == 31) s_slots[c * S::kWarps + warp] = warp_inclusive[c];
    }
    __syncthreads();

    if (warp == 0) {
        const T aggregate = scan_slots_exclusive<S>(s_slots, lane);
        T prefix = T(0);
        if (tile == 0) {
            if (lane == 0) publish_descriptor(descriptors, 0, kFlagP, epoch, aggregate);
        } else {
            if (lane == 0) publish_descriptor(descriptors, tile, kFlagA, epoch, aggregate);
            first_pause();
            prefix = lookback_exclusive_prefix(descriptors, tile, epoch, aggregate);
        }
        if (lane == 0) s_prefix = prefix;
    }
    __syncthreads();

    const T prefix = s_prefix;
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
        const T before_lane = __shfl_up_sync(0xffffffffu, warp_inclusive[c], 1);
        T running = prefix + s_slots[c * S::kWarps + warp] + (lane > 0 ? before_lane : T(0));
#pragma unroll
        for (int j = 0; j < S::kChunk; ++j) {
            const T x = v[c * S::kChunk + j];
            if (kInclusive) running += x;
            v[c * S::kChunk + j] = running;
            if (!kInclusive) running += x;
        }
    }
    store_tile<S>(out, base, n, full_tile, v);
}
