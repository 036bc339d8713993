// Drill 05's kernel with hooks: the one body that the tuning knobs (05_lookback_variants.cu)
// and the per-tile timeline (ceiling.cu, part 3) both run.
//
// It is ../05_lookback_scan.cu's lookback_scan and lookback_exclusive_prefix, step for step,
// with two kinds of hook. A Tile holds and moves the tile's elements: RegisterTile below is
// the answer's (load_tile / store_tile, the tile in registers); the variants add the knobbed
// loads and the staged tile. Hooks pause the look-back (0 ns: no pause) and see its events;
// QuietHooks sees nothing. The answer's own kernel has no hooks and stays as the student's
// starter frames it (the two files differ only in the TODO region), so the body is written
// a second time here, once for both experiments.
//
// Include after ../05_lookback_scan.cu: the descriptors, the warp helpers, TileShape,
// chunk_start, load_tile / store_tile and scan_slots_exclusive are the answer's.
#pragma once

// The look-back's two pauses (template arguments, in ns; 0: none), and no events. Each event
// is called only by the thread its comment names.
template <unsigned int kFirstNs, unsigned int kSpinNs>
struct QuietHooks {
    __device__ __forceinline__ void first_pause() {
        if constexpr (kFirstNs > 0) __nanosleep(kFirstNs);
    }
    __device__ __forceinline__ void spin_pause() {
        if constexpr (kSpinNs > 0) __nanosleep(kSpinNs);
    }
    __device__ __forceinline__ void drawn() {}         // thread 0: the ticket is drawn
    __device__ __forceinline__ void loaded() {}        // thread 0: loaded and reduced (the partial totals' barrier)
    __device__ __forceinline__ void published() {}     // lane 0 of warp 0: A (tile 0: P) published
    __device__ __forceinline__ void prefix_known() {}  // lane 0 of warp 0: the exclusive prefix known
    __device__ __forceinline__ void window_read() {}   // warp 0: each read of the look-back window
    __device__ __forceinline__ void retry() {}         // warp 0: a read that found a needed predecessor X
    __device__ __forceinline__ void stored(unsigned int) {}  // thread 0: its stores issued (the tile's index)
};

// The answer's tile: kItems elements a thread in registers. at/put are element j of the
// thread's chunk c; store_chunk is for a tile that stores chunk by chunk (the staged one).
// Chunk c of thread tid is chunk c * kThreads + tid of the tile, kChunk consecutive
// elements: one load instruction of a warp covers 32 consecutive 16-byte chunks, 512
// contiguous bytes, and a thread has kChunks independent 16-byte loads in flight. The
// tile's elements in order are chunk 0 of every thread, then chunk 1 of every thread, and
// so on. A full tile uses float4/int4 (a tile starts at a multiple of its size, and
// cudaMalloc aligns to 256 bytes); the partial last tile, and every tile of a shape whose
// kItems is not a multiple of 4, takes the guarded scalar path, which loads the identity 0
// past the end and stores nothing there.
template <class S, typename T>
struct RegisterTile {
    using Shape = S;
    T v[S::kItems];
    __device__ __forceinline__ void prefetch(const T* __restrict__, size_t) {}  // all threads, before the ticket
    __device__ __forceinline__ void setup() {}                                   // thread 0, before the ticket
    __device__ __forceinline__ void load(const T* __restrict__ in, size_t base, size_t n, bool full_tile) {
        load_tile<S>(in, base, n, full_tile, v);
    }
    __device__ __forceinline__ T at(int c, int j) const { return v[c * S::kChunk + j]; }
    __device__ __forceinline__ void put(int c, int j, T x) { v[c * S::kChunk + j] = x; }
    __device__ __forceinline__ void store_chunk(T* __restrict__, size_t, size_t, bool, int) {}
    __device__ __forceinline__ void store(T* __restrict__ out, size_t base, size_t n, bool full_tile) {
        store_tile<S>(out, base, n, full_tile, v);
    }
};

// The answer's look-back (its TODO region), with the hooks' spin pause and events.
//
// The descriptors' memory ordering, at length (the answer's comment is the short form):
//  - A reader that sees flag P must see P's value, never an older one. With the flag
//    and the value in two words that takes two fences: the writer stores the value,
//    __threadfence(), then the flag; the reader loads the flag, __threadfence(), then
//    the value (and both loads must be strong, see below). Packed into one word that
//    is written and read by single 64-bit accesses, the pair can not tear: one load
//    sees a flag together with its own value. No fence is needed anywhere in this
//    kernel, and none is used.
//  - The loads in the look-back must be strong (here: atomic_ref loads, relaxed, at
//    device scope; `volatile` would do too). A plain load may be hoisted out of the
//    spin loop by the compiler, which sees nobody in this thread change the word, and
//    may be served from this SM's L1, which does not see other SMs' stores: either way
//    the spin may never end, or end by luck when the line leaves the L1 (on an H200 the
//    same plain load hung one run and finished the next, so the grader looks for it in
//    the compiled PTX). A device-scope load goes to L2, where every SM's store lands.
//    Relaxed is enough because the word is all we read from the predecessor;
//    memory_order_acquire (ld.acquire, which may also invalidate the SM's L1 so later
//    plain loads see other SMs' data) would be needed only if we went on to read
//    other data the predecessor wrote, e.g. a value kept in a second word.
//  - The stores are relaxed device-scope atomics too: each is one 64-bit store that
//    the compiler can not split or drop, and it reaches L2 with no fence. Lane 0 of
//    warp 0 stores A and later P to the same word: stores by one thread to one
//    address are seen by everybody in that order (coherence), so no reader sees P
//    and then A again.
//  - Why A before the look-back: a successor can use our aggregate as soon as our own
//    sum is known, without waiting for our look-back, which may itself be waiting on
//    older tiles. If tiles published only P, each tile's P would wait for its
//    predecessor's P: one L2 round trip per tile in a chain through the whole array,
//    the serial "chained scan". With A, a warp covers up to 32 tiles per round trip.
//    (It is not what rules out deadlock; the ticket is.)
//  - Why the words must be reset (or carry an epoch) between launches: they outlive
//    the kernel. Tile t's word from the previous launch says A or P with the previous
//    data's value, and a successor would take it at once: a wrong prefix, no waiting.
//    CUB clears its descriptors with an extra kernel before every scan; this program
//    tags each word with the launch's epoch (1, 2, 3, ... from the host) instead, so a
//    word from another launch reads as X and no clearing pass is needed. The epoch
//    has 30 bits; the host clears the array before it wraps.
template <class Hooks, typename T>
__device__ T lookback_exclusive_prefix_hooked(Descriptor* descriptors, unsigned int tile, unsigned int epoch,
                                              T aggregate, Hooks& hooks) {
    const unsigned int lane = threadIdx.x % 32;
    T prefix = T(0);
    for (long long nearest = (long long)tile - 1;; nearest -= kLookbackWindow) {
        const long long pred = nearest - lane;
        Descriptor word;
        unsigned int p_lanes, needed;
        while (true) {
            hooks.window_read();
            word = pred >= 0 ? load_descriptor(descriptors, unsigned(pred)) : pack_descriptor(kFlagP, epoch, T(0));
            const unsigned int flag = descriptor_flag(word, epoch);
            p_lanes = __ballot_sync(0xffffffffu, flag == kFlagP);
            const unsigned int x_lanes = __ballot_sync(0xffffffffu, flag == kFlagX);
            needed = p_lanes != 0 ? p_lanes ^ (p_lanes - 1) : 0xffffffffu;  // lanes 0 .. the lowest P
            if ((x_lanes & needed) == 0) break;
            hooks.retry();
            hooks.spin_pause();
        }
        prefix += warp_sum((needed >> lane) & 1u ? descriptor_value<T>(word) : T(0));
        if (p_lanes != 0) break;
    }
    if (lane == 0) publish_descriptor(descriptors, tile, kFlagP, epoch, prefix + aggregate);
    return prefix;
}

// The answer's kernel body, with the Tile's loads and stores and the Hooks' pauses: one
// tile per block, exclusive or inclusive, of float32 or int32. Three barriers in all:
// after the ticket, after each warp's partial totals, after warp 0's look-back. Between
// the last two, the other warps wait (the register tile: with their elements in registers)
// while warp 0 scans the totals, publishes A, looks back and publishes P.
//
// The ticket: thread 0 draws the tile with atomicAdd, and the block reads it from shared
// memory. Tiles are handed out in the order blocks START, which blockIdx.x is not: the
// hardware may start block 70000 before block 69999, and a block that spins on a
// predecessor that has no SM yet (every SM busy with spinning successors) would wait for
// ever. With tickets, whoever holds ticket t - 1 is already running and waits only on
// lower tickets, so the lowest unfinished tile always makes progress. The block that draws
// the last ticket resets the counter for the next launch: every other ticket has been
// drawn by then.
template <bool kInclusive, class Tile, class Hooks, typename T>
__device__ __forceinline__ void scan_one_tile(const T* __restrict__ in, T* __restrict__ out, size_t n,
                                              Descriptor* __restrict__ descriptors,
                                              unsigned int* __restrict__ tile_counter, unsigned int epoch,
                                              Hooks& hooks) {
    using S = typename Tile::Shape;
    __shared__ unsigned int s_tile;
    __shared__ T s_slots[S::kSlots];
    __shared__ T s_prefix;
    const unsigned int tid = threadIdx.x;
    const unsigned int lane = tid % 32;
    const unsigned int warp = tid / 32;
    Tile elements;

    elements.prefetch(in, n);
    if (tid == 0) {
        elements.setup();
        const unsigned int ticket = atomicAdd(tile_counter, 1u);
        hooks.drawn();
        if (ticket == gridDim.x - 1) atomicExch(tile_counter, 0u);
        s_tile = ticket;
    }
    __syncthreads();
    const unsigned int tile = s_tile;
    const size_t base = size_t(tile) * S::kTile;
    const bool full_tile = base + S::kTile <= n;
    elements.load(in, base, n, full_tile);

    T warp_inclusive[S::kChunks];
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
        T sum = elements.at(c, 0);
#pragma unroll
        for (int j = 1; j < S::kChunk; ++j) sum += elements.at(c, j);
        warp_inclusive[c] = warp_inclusive_scan(sum, lane);
        if (lane == 31) s_slots[c * S::kWarps + warp] = warp_inclusive[c];
    }
    __syncthreads();
    if (tid == 0) hooks.loaded();

    if (warp == 0) {
        const T aggregate = scan_slots_exclusive<S>(s_slots, lane);
        T prefix = T(0);
        if (tile == 0) {
            if (lane == 0) publish_descriptor(descriptors, 0, kFlagP, epoch, aggregate);
            if (lane == 0) hooks.published();
        } else {
            if (lane == 0) publish_descriptor(descriptors, tile, kFlagA, epoch, aggregate);
            if (lane == 0) hooks.published();
            hooks.first_pause();
            prefix = lookback_exclusive_prefix_hooked(descriptors, tile, epoch, aggregate, hooks);
        }
        if (lane == 0) s_prefix = prefix;
        if (lane == 0) hooks.prefix_known();
    }
    __syncthreads();

    const T prefix = s_prefix;
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
        const T before_lane = __shfl_up_sync(0xffffffffu, warp_inclusive[c], 1);
        T running = prefix + s_slots[c * S::kWarps + warp] + (lane > 0 ? before_lane : T(0));
#pragma unroll
        for (int j = 0; j < S::kChunk; ++j) {
            const T x = elements.at(c, j);
            if (kInclusive) running += x;
            elements.put(c, j, running);
            if (!kInclusive) running += x;
        }
        elements.store_chunk(out, base, n, full_tile, c);
    }
    elements.store(out, base, n, full_tile);
    if (tid == 0) hooks.stored(tile);
}
