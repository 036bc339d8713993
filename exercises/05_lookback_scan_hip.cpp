// A05 stretch drill 05 in HIP, the kernel file: the whole scan in one pass, decoupled look-back.
//
// The HIP port of 05_lookback_scan.cu. A block takes the next tile from an atomic
// ticket, scans it in registers and publishes its sum at once (flag A). Wavefront 0
// then looks back over the descriptors of the warpSize tiles before it (64 on CDNA, 32
// on RDNA and NVIDIA), adds aggregates back to the nearest inclusive prefix (flag P),
// and publishes this tile's P. Nothing assumes 32 or 64 lanes: masks are 64-bit.
//
// Yours: lookback_exclusive_prefix, the TODO region (about 16 lines); it calls only
// what is above it. Untouched, every tile is scanned on its own: the check table says
// "correct in tile 0 only" and the last line names the function. The checks, the
// never-hang suite, the watchdog, rocPRIM and main are the bench program, which
// #includes this file (keep the kernel's name and signature); from exercises/:
//   make stretch-hip    (hipcc ... bench/05_lookback_scan_bench_hip.cpp; its header: the nvcc line)
//   ../build/exercises/hip/05_lookback_scan --check-only      (--stress, --bench, --help)
// Another kernel file: -DSUBMISSION='"path/to/file.cpp"'. The answer is solutions/05_lookback_scan_hip.cpp.

#include <hip/hip_runtime.h>
#include <cstddef>
#include <cstring>
#include <type_traits>

// ---- the spellings that differ -------------------------------------------------
// HIP's lane primitives take no mask and its __ballot returns 64 bits; through the
// HIP-on-CUDA header (SCANLAB_HIP_ON_CUDA) each maps to its CUDA twin. A descriptor is
// a relaxed atomic at device ("agent") scope: on gfx90a a glc load/store (to L2, past
// the CU's L1); on NVIDIA a volatile 64-bit access, which PTX makes a relaxed atomic.
using Descriptor = unsigned long long;
#if defined(SCANLAB_HIP_ON_CUDA)
__device__ __forceinline__ unsigned long long lane_ballot(bool predicate) { return __ballot_sync(0xffffffffu, predicate); }
template <typename T>
__device__ __forceinline__ T lane_shfl(T v, int src_lane) { return __shfl_sync(0xffffffffu, v, src_lane); }
template <typename T>
__device__ __forceinline__ T lane_shfl_xor(T v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }
__device__ __forceinline__ Descriptor atomic_load_relaxed(Descriptor* word) { return *static_cast<volatile Descriptor*>(word); }
__device__ __forceinline__ void atomic_store_relaxed(Descriptor* word, Descriptor value) {
    *static_cast<volatile Descriptor*>(word) = value;
}
#else
__device__ __forceinline__ unsigned long long lane_ballot(bool predicate) { return __ballot(predicate); }
template <typename T>
__device__ __forceinline__ T lane_shfl(T v, int src_lane) { return __shfl(v, src_lane); }
template <typename T>
__device__ __forceinline__ T lane_shfl_xor(T v, int lane_mask) { return __shfl_xor(v, lane_mask); }
__device__ __forceinline__ Descriptor atomic_load_relaxed(Descriptor* word) {
    return __hip_atomic_load(word, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
__device__ __forceinline__ void atomic_store_relaxed(Descriptor* word, Descriptor value) {
    __hip_atomic_store(word, value, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
#endif

// ---- the tile descriptors ----------------------------------------------------
// One 64-bit word per tile: status (epoch * 4 + flag) above the value's 32 bits. Flag
// A (1): the tile's aggregate; P (2): its inclusive prefix; anything else, another
// launch's epoch too, is X: not ready (so no clearing pass between launches). One
// word, one access: no tearing, no fence. The loads must be strong (above): a plain
// one may be hoisted out of the wait or served from the CU's L1, which never sees
// another CU's store. A comes before the look-back, so successors need not wait on it.
constexpr unsigned int kFlagX = 0;
constexpr unsigned int kFlagA = 1;
constexpr unsigned int kFlagP = 2;
// The look-back's pauses, before the first read and after a read that found a needed
// predecessor not ready: none here, untuned on AMD (__builtin_amdgcn_s_sleep(k) would
// pause about 64k clocks; on an H200 the CUDA file's pauses were worth 0.13 of a copy).
__device__ __forceinline__ void first_pause() {}
__device__ __forceinline__ void spin_pause() {}

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
    atomic_store_relaxed(descriptors + tile, pack_descriptor(flag, epoch, value));
}
__device__ __forceinline__ Descriptor load_descriptor(Descriptor* descriptors, unsigned int tile) {
    return atomic_load_relaxed(descriptors + tile);
}
// Sum over the wavefront's lanes, every lane gets it (a butterfly: log2(warpSize) shuffles).
template <typename T>
__device__ __forceinline__ T wave_sum(T v) {
    for (int mask = warpSize / 2; mask > 0; mask /= 2) v += lane_shfl_xor(v, mask);
    return v;
}

// ==== TODO region begin: the look-back ==========================================
//
// lookback_exclusive_prefix runs in wavefront 0 of a tile `tile` > 0, just after lane
// 0 published the tile's aggregate (flag A). It returns, in every lane, the sum of all
// tiles before this one, and lane 0 publishes P = prefix + aggregate at once.
//
// TODO (about 16 lines). As given, nothing comes from the predecessors: prefix stays
// 0, every tile comes out scanned on its own, and every check past the first tile
// fails. The pieces, all defined above: load_descriptor(descriptors, t),
// descriptor_flag(word, epoch) (kFlagA, kFlagP or kFlagX), descriptor_value<T>(word),
// pack_descriptor(flag, epoch, value), wave_sum(v), spin_pause(), warpSize, and
// lane_ballot(predicate): a 64-bit mask, bit l set where lane l's predicate holds.
// Nothing may assume 32 or 64 lanes. Steps:
//   1. The window: lane l reads the descriptor of tile nearest - l, with nearest =
//      tile - 1 at first, so lane 0 holds the closest predecessor. A lane that falls
//      before tile 0 reads nothing and stands for a P of value 0.
//   2. The needed lanes: every lane up to and including the lowest lane with flag P;
//      all of them when no lane has P. Two ballots (P lanes, X lanes) give it.
//   3. Wait: while any needed lane is X, read the whole window again.
//   4. Add: wave_sum of the needed lanes' values (0 from the other lanes) into prefix.
//   5. A P was among them: done (lane 0 publishes P below). Otherwise move the window
//      warpSize tiles back and go on from step 2; the sum so far stays.
// Decide every branch from ballots, the same in every lane: wave_sum needs the whole
// wavefront. A loop that never finds its P hangs; the bench's watchdog says so (exit 1).
template <typename T>
__device__ T lookback_exclusive_prefix(Descriptor* descriptors, unsigned int tile, unsigned int epoch,
                                       T aggregate) {
    const unsigned int lane = threadIdx.x % unsigned(warpSize);
    T prefix = T(0);
    // TODO: the look-back loop.
    if (lane == 0) publish_descriptor(descriptors, tile, kFlagP, epoch, prefix + aggregate);
    return prefix;
}
// ==== TODO region end ===========================================================

// ---- the tile -----------------------------------------------------------------
// A tile of kThreads * kItems elements, whole 64-lane wavefronts (wave64 and wave32
// alike); thread tid moves chunks c * kThreads + tid of kChunk elements: float4/int4 on
// a full tile, else guarded scalars (the identity 0 past the end).
constexpr int kMinLanes = 32;  // the narrowest wavefront: sizes the shared arrays
template <int kThreadsT, int kItemsT>
struct TileShape {
    static constexpr int kThreads = kThreadsT;
    static constexpr int kItems = kItemsT;
    static constexpr int kTile = kThreads * kItems;
    static constexpr int kChunk = kItems % 4 == 0 ? 4 : kItems;  // consecutive elements a thread moves at once
    static constexpr int kChunks = kItems / kChunk;
    static constexpr int kMaxWaves = kThreads / kMinLanes;
    static constexpr int kMaxSlots = kChunks * kMaxWaves;         // one partial total per (chunk, wavefront)
    static constexpr int kMaxSlotsPerLane = (kMaxSlots + kMinLanes - 1) / kMinLanes;
    static_assert(kThreads % 64 == 0 && kThreads <= 1024, "whole 64-lane wavefronts, at most 1024 threads");
    static_assert(kItems == 1 || kItems == 2 || kItems % 4 == 0, "1, 2 or a multiple of 4 items");
};
// The shape timed: untuned on AMD (the CUDA file's best on an H200: 128 x 24, pauses).
using TunedShape = TileShape<256, 16>;

template <typename T> struct Vec4;
template <> struct Vec4<float> { using type = float4; };
template <> struct Vec4<int> { using type = int4; };

// Loads (P = const T*) or stores (P = T*) this thread's kItems elements of the tile.
template <class S, typename P, typename T>
__device__ __forceinline__ void move_tile(P data, size_t base, size_t n, bool full_tile, T (&v)[S::kItems]) {
    constexpr bool kStore = !std::is_const<std::remove_pointer_t<P>>::value;
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
        const size_t first = base + (size_t(c) * S::kThreads + threadIdx.x) * S::kChunk;
        if constexpr (S::kChunk == 4) {
            if (full_tile) {
                auto* at = reinterpret_cast<std::conditional_t<kStore, typename Vec4<T>::type*,
                                                               const typename Vec4<T>::type*>>(data + first);
                if constexpr (kStore) {
                    *at = {v[4 * c + 0], v[4 * c + 1], v[4 * c + 2], v[4 * c + 3]};
                } else {
                    const auto q = *at;
                    v[4 * c + 0] = q.x, v[4 * c + 1] = q.y, v[4 * c + 2] = q.z, v[4 * c + 3] = q.w;
                }
                continue;
            }
        }
#pragma unroll
        for (int j = 0; j < S::kChunk; ++j) {
            if constexpr (kStore) {
                if (first + j < n) data[first + j] = v[c * S::kChunk + j];
            } else {
                v[c * S::kChunk + j] = first + j < n ? data[first + j] : T(0);
            }
        }
    }
}

// Hillis-Steele across the wavefront in registers: lane l gets lanes 0..l.
template <typename T>
__device__ __forceinline__ T wave_inclusive_scan(T v, unsigned int lane) {
    for (unsigned int offset = 1; offset < unsigned(warpSize); offset *= 2) {
        const T up = __shfl_up(v, offset);
        if (lane >= offset) v += up;
    }
    return v;
}

// Wavefront 0: the exclusive scan, in place, of the partial totals (slot c * waves + w
// is wavefront w's chunk c; lane l owns per_lane of them). Returns the tile's total.
template <class S, typename T>
__device__ __forceinline__ T scan_slots_exclusive(T* slots, unsigned int lane) {
    const unsigned int lanes = unsigned(warpSize);
    const unsigned int count = unsigned(S::kChunks * S::kThreads) / lanes;
    const unsigned int per_lane = (count + lanes - 1) / lanes;
    T mine[S::kMaxSlotsPerLane];
    T lane_total = T(0);
#pragma unroll
    for (int k = 0; k < S::kMaxSlotsPerLane; ++k) {
        const unsigned int s = lane * per_lane + unsigned(k);
        mine[k] = unsigned(k) < per_lane && s < count ? slots[s] : T(0);
        lane_total += mine[k];
    }
    const T inclusive = wave_inclusive_scan(lane_total, lane);
    const T tile_total = lane_shfl(inclusive, int(lanes) - 1);
    const T before_lane = __shfl_up(inclusive, 1);
    T running = lane > 0 ? before_lane : T(0);
#pragma unroll
    for (int k = 0; k < S::kMaxSlotsPerLane; ++k) {
        const unsigned int s = lane * per_lane + unsigned(k);
        if (unsigned(k) < per_lane && s < count) slots[s] = running;
        running += mine[k];
    }
    return tile_total;
}

// ---- the kernel -----------------------------------------------------------------
// One tile per block, exclusive or inclusive, float32 or int32. Three barriers: after
// the ticket, after each wavefront's partial totals, after wavefront 0's look-back.
// Tickets go out in the order blocks START, so the holder of ticket t - 1 is running
// and the lowest unfinished tile always progresses; the last ticket resets the counter.
template <class S, typename T, bool kInclusive>
__global__ void __launch_bounds__(S::kThreads)
    lookback_scan(const T* __restrict__ in, T* __restrict__ out, size_t n, Descriptor* __restrict__ descriptors,
                  unsigned int* __restrict__ tile_counter, unsigned int epoch) {
    __shared__ unsigned int s_tile;
    __shared__ T s_slots[S::kMaxSlots];
    __shared__ T s_prefix;
    const unsigned int tid = threadIdx.x;
    const unsigned int lanes = unsigned(warpSize);
    const unsigned int lane = tid % lanes;
    const unsigned int wave = tid / lanes;
    const unsigned int waves = unsigned(S::kThreads) / lanes;
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
    move_tile<S>(in, base, n, full_tile, v);
    // Each chunk's sum, scanned across the wavefront; its last lane holds the chunk total.
    T wave_inclusive[S::kChunks];
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
        T sum = v[c * S::kChunk];
#pragma unroll
        for (int j = 1; j < S::kChunk; ++j) sum += v[c * S::kChunk + j];
        wave_inclusive[c] = wave_inclusive_scan(sum, lane);
        if (lane == lanes - 1) s_slots[unsigned(c) * waves + wave] = wave_inclusive[c];
    }
    __syncthreads();

    if (wave == 0) {
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
        const T before_lane = __shfl_up(wave_inclusive[c], 1);
        T running = prefix + s_slots[unsigned(c) * waves + wave] + (lane > 0 ? before_lane : T(0));
#pragma unroll
        for (int j = 0; j < S::kChunk; ++j) {
            const T x = v[c * S::kChunk + j];
            if (kInclusive) running += x;
            v[c * S::kChunk + j] = running;
            if (!kInclusive) running += x;
        }
    }
    move_tile<S>(out, base, n, full_tile, v);
}
