// Going further after drill 05: a persistent, pipelined single-pass scan for sm_90.
//
// Drill 05's decoupled look-back gives every tile its own block, and while warp 0 looks back
// the rest of the block waits at a barrier: on the H200 that design stops near 0.75 of a copy,
// CUB's included. This kernel keeps the look-back's one idea (a tile publishes its aggregate
// the moment it is reduced, in the same epoch-tagged 64-bit descriptor) and drops the rest:
//   - one block per SM, alive for the whole array (persistent), taking tiles in ticket order;
//   - a ring of kStages shared-memory stages that a producer warp fills with cp.async.bulk
//     (the TMA's 1D bulk copy) while the other warps work on earlier stages;
//   - no chain of inclusive prefixes: no tile ever publishes flag P. A look-ahead warp keeps
//     the block's running prefix by adding the aggregates of the tiles drawn since the block's
//     previous tile (about one per SM, all loaded at about the same time as ours);
//   - no whole-block barrier after start-up: every hand-over is an mbarrier, waited on by only
//     the warps that need it.
//
// The map, warp by warp (block = 3 + kScanWarps warps, 224 threads; tile = kTile elements,
// 4096 by default; stage s = k % kStages for the block's k-th tile, 12 stages by default):
//   warp 0  producer    waits empty[s]; lane 0 draws the next ticket; writes it to ticket[s];
//                       bulk-loads the tile into stage s, completing on full[s]. A ticket past the
//                       end becomes kNoTile in ticket[s] (a plain arrive on full[s]) and the warp ends.
//   warp 1  look-ahead  waits full[s] (for the ticket); reads the descriptors of tiles
//                       [previous ticket, this ticket) until all show flag A, adds them to the
//                       running prefix; writes prefix[s]; arrives prefix_ready[s] (tile_prefix).
//   warp 2  reduce      waits full[s]; sums the stage, one partial per scan warp's part into
//                       part[s][w]; publishes the tile's aggregate (flag A); arrives reduced[s]
//                       and empty[s].
//   warps 3.. scan      wait full[s], reduced[s], prefix_ready[s]; carry = prefix[s] + the parts
//                       before theirs; scan their part in rounds of 128 elements (a warp scan of
//                       float4 sums) and store it: 16-byte stores from registers, or
//                       (PIPE_BULK_STORE=1) in place in the stage and one bulk store a part;
//                       arrive empty[s] once the stage is no longer read (after the bulk store's
//                       read, cp.async.bulk.wait_group.read, one tile later).
// Why no barrier: each stage has four mbarriers, each with a fixed set of arrivals a use
// (full: the producer + the load's bytes; reduced, prefix_ready: one lane; empty: the reduce
// warp and every scan warp). A waiter passes a phase by its parity (use & 1), and no waiter
// can fall a whole phase behind: the stage is not refilled (full's next phase) before empty
// completes, and empty needs every scan warp, which needs prefix_ready and reduced of the same
// use. So the producer runs up to kStages tiles ahead, the reduce warp publishes aggregates
// as soon as data lands, and the look-ahead works on tile k+1 while the scan warps store tile k.
// Why it can not hang: tickets go out in order to running blocks only, so the lowest tile
// whose aggregate is unpublished belongs to a running block whose earlier tiles need only
// aggregates below it (all published): that block's warps reach it. No block waits on a block
// that has not started, so the grid may exceed what is resident (it never does here).
// The ticket counter is not reset by "the last block" (producers draw ahead, so the last
// draw is not the end of the work): there are two counters; launch number L of this state
// uses counters[L & 1] and its block 0 zeroes counters[(L + 1) & 1], which the previous
// launch used (finished: launches are stream-ordered) and the next one will use. Each
// producer draws exactly one ticket past the end, so a launch leaves tiles + grid in its
// counter: the bench checks that, and that every tile was scanned exactly once.
//
// Memory ordering: the descriptor rules are drill 05's (the comment in 05_lookback_scan.cu):
// one 64-bit word, relaxed device-scope store and load, no fence. Inside the block, an
// mbarrier arrive releases and a completed wait acquires (CTA scope), so ticket[s], part[s],
// prefix[s] written before an arrive are seen after the wait; the bulk load's bytes are
// seen after full[s] completes. Results written to a stage by the scan warps are handed to
// the bulk store (the async proxy) with fence.proxy.async.shared::cta first.
//
// This file is a kernel file: it #includes drill 05's answer (05_lookback_scan.cu: the
// descriptors, warp_sum, warp_inclusive_scan, Vec4 and the classic lookback_scan, which the
// dispatcher uses below a crossover) and is #included by its bench program:
//   nvcc -std=c++17 -O3 -arch=sm_90 -lineinfo -Xcompiler -Wall,-Wextra -o pipelined_bench experiments/pipelined_bench.cu
//   ./pipelined_bench --check-only --full ; ./pipelined_bench --stress ; ./pipelined_bench --bench
// (solutions/experiments/run_pipelined_device.sh builds and runs all of it, with tuning builds).
// The knobs (-D on the compile line, default in brackets; the defaults are the fastest build the
// H200 sweep of 2026-12-04 measured: 12 x 16 KiB 0.971 of copy at 2^28 float32, 6 x 32 KiB 0.944):
//   PIPE_STAGES [12]  PIPE_TILE_KIB [16]  PIPE_SCAN_WARPS [4]  PIPE_BULK_STORE [0]
//   PIPE_SPIN_NS [128] the look-ahead's pause between re-reads of unready descriptors
//   PIPE_CROSSOVER_LOG2 [23]  the dispatcher's classic/pipelined crossover, n = 2^K (the same
//                     sweep: the pipelined kernel wins at every n from 2^23, loses at 2^21-2^22)
// and the ablation's, each undoing one step of the design (pipelined_bench --ablation times all):
//   PIPE_PUBLISH [0]   1: the classic chain, a tile publishes P after its look-back and the next looks back to it
//   PIPE_LOOKAHEAD_WARP [1]  0: the first scan warp finds each prefix before scanning (warp 1 idles)
//   PIPE_PERSISTENT [1]  0: one tile a block, grid = tiles (with PIPE_PUBLISH=1)
// sm_90 only (cp.async.bulk, mbarrier expect_tx): a HIP port would need the ring built from
// plain loads or the gfx942/gfx950 async global->LDS loads, and s_sleep/waitcnt in place of mbarriers.

#include <cuda/atomic>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>

#include "05_lookback_scan.cu"

// ---- the knobs -------------------------------------------------------------------
#ifndef PIPE_STAGES
#define PIPE_STAGES 12
#endif
#ifndef PIPE_TILE_KIB
#define PIPE_TILE_KIB 16
#endif
#ifndef PIPE_SCAN_WARPS
#define PIPE_SCAN_WARPS 4
#endif
#ifndef PIPE_BULK_STORE
#define PIPE_BULK_STORE 0
#endif
#ifndef PIPE_SPIN_NS
#define PIPE_SPIN_NS 128
#endif
#ifndef PIPE_CROSSOVER_LOG2
#define PIPE_CROSSOVER_LOG2 23
#endif
// The ablation's knobs: each undoes one step of the design (the defaults are the design).
#ifndef PIPE_PUBLISH
#define PIPE_PUBLISH 0  // 1: the classic chain, an inclusive prefix (flag P) per tile, looked back to
#endif
#ifndef PIPE_LOOKAHEAD_WARP
#define PIPE_LOOKAHEAD_WARP 1  // 0: no look-ahead warp; the first scan warp finds each prefix itself
#endif
#ifndef PIPE_PERSISTENT
#define PIPE_PERSISTENT 1  // 0: one tile a block, grid = tiles (needs PIPE_PUBLISH=1)
#endif
constexpr size_t kPipelinedMinN = size_t(1) << PIPE_CROSSOVER_LOG2;
constexpr unsigned kLookAheadSleepNs = PIPE_SPIN_NS;
constexpr unsigned kNoTile = 0xFFFFFFFFu;  // ticket[s] after the last tile: every consumer warp ends
constexpr unsigned kPipeMaxEpoch = (1u << 30) - 1;  // the descriptor's epoch has 30 bits
constexpr int kLookAheadWidth = 8;         // descriptors a look-ahead lane reads at once: 256 tiles a pass

// ---- GPU kernels: mbarrier and bulk-copy wrappers (sm_90 PTX) ----------------------
__device__ __forceinline__ unsigned smem_addr(const void* p) { return unsigned(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// The barriers' initialisation must be visible to the async proxy (the bulk copies'
// complete_tx) before the first copy is issued.
__device__ __forceinline__ void fence_barrier_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// The producer's one arrival for a stage, announcing the bytes its bulk copy will deliver:
// the phase completes when both the arrival and the bytes are in.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
// Until the phase with this parity has completed (try_wait suspends a while in hardware).
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n\t.reg .pred p;\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(smem_addr(bar)), "r"(parity)
            : "memory");
    }
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
}
__device__ __forceinline__ void bulk_store(void* dst, const void* src, unsigned bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_addr(src)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until at most kPending of this thread's bulk stores still READ shared memory.
template <int kPending>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
// Generic-proxy writes to shared memory (the scan's results), made visible to a bulk store.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// ---- the shape and the shared memory ------------------------------------------------
// The last three are the ablation's (PIPE_PUBLISH, PIPE_LOOKAHEAD_WARP, PIPE_PERSISTENT): the
// defaults are the design; each other value undoes one of its steps.
template <int kTileBytesT, int kStagesT, int kScanWarpsT, bool kBulkStoreT, bool kChainT = false,
          bool kDedicatedLookAheadT = true, bool kPersistentT = true>
struct PipeShape {
    static constexpr int kTile = kTileBytesT / 4;  // elements (float32 or int32)
    static constexpr int kStages = kStagesT;
    static constexpr int kScanWarps = kScanWarpsT;
    static constexpr bool kBulkStore = kBulkStoreT;
    static constexpr bool kChain = kChainT;                            // publish P and look back to it
    static constexpr bool kDedicatedLookAhead = kDedicatedLookAheadT;  // warp 1 finds the prefixes
    static constexpr bool kPersistent = kPersistentT;                  // one block an SM, many tiles each
    static constexpr int kProducerWarp = 0, kLookAheadWarp = 1, kReduceWarp = 2, kFirstScanWarp = 3;
    static constexpr int kThreads = 32 * (kFirstScanWarp + kScanWarps);
    static constexpr int kPart = kTile / kScanWarps;  // elements a scan warp owns in a tile
    static constexpr int kRounds = kPart / 128;        // 128 elements = 32 lanes x 4 a round
    static constexpr int kUnroll = kRounds % 4 == 0 ? 4 : kRounds % 2 == 0 ? 2 : 1;  // rounds in flight at once
    static constexpr unsigned kEmptyArrivals = 1 + kScanWarps;  // the reduce warp and every scan warp
    static_assert(kStages >= 2, "one stage loading while another is scanned (and the deferred release needs 2)");
    static_assert(kTile % (128 * kScanWarps) == 0, "every scan warp owns whole 128-element rounds");
    static_assert(kPersistent || kChain, "one tile a block needs the chain: a running prefix has no previous tile");
};

template <class P, typename T>
struct PipeSmem {
    alignas(128) T stage[P::kStages][P::kTile];
    unsigned long long full[P::kStages], empty[P::kStages], reduced[P::kStages], prefix_ready[P::kStages];
    unsigned ticket[P::kStages];
    T part[P::kStages][P::kScanWarps];
    T prefix[P::kStages];
};

// ---- GPU kernels: the four roles ------------------------------------------------------
template <class P, typename T>
__device__ __forceinline__ void produce(PipeSmem<P, T>& sm, const T* __restrict__ in, size_t n, unsigned tiles,
                                        unsigned* counter) {
    const unsigned lane = threadIdx.x % 32;
    for (unsigned k = 0;; ++k) {
        const unsigned s = k % P::kStages, use = k / P::kStages;
        if (use > 0) mbar_wait(&sm.empty[s], (use - 1) & 1);
        unsigned ticket = kNoTile;  // not persistent: one ticket a block, then the end
        if (lane == 0 && (P::kPersistent || k == 0)) ticket = atomicAdd(counter, 1u);
        ticket = __shfl_sync(0xffffffffu, ticket, 0);
        if (ticket >= tiles) {
            if (lane == 0) {
                sm.ticket[s] = kNoTile;
                mbar_arrive(&sm.full[s]);
            }
            return;
        }
        const size_t base = size_t(ticket) * P::kTile;
        const unsigned valid = unsigned(n - base < size_t(P::kTile) ? n - base : size_t(P::kTile));
        const unsigned bulk = valid & ~3u;  // the bulk copy moves multiples of 16 bytes
        T* stage = sm.stage[s];
        if (valid < unsigned(P::kTile)) {
            // The partial last tile: its ragged end by plain loads, the identity after it, so
            // the reduce and scan warps run the full-tile code; only the stores are guarded.
            for (unsigned i = bulk + lane; i < unsigned(P::kTile); i += 32) stage[i] = i < valid ? in[base + i] : T(0);
            __syncwarp();
        }
        if (lane == 0) {
            sm.ticket[s] = ticket;
            if (bulk > 0) {
                mbar_arrive_expect_tx(&sm.full[s], bulk * unsigned(sizeof(T)));
                bulk_load(stage, in + base, bulk * unsigned(sizeof(T)), &sm.full[s]);
            } else {
                mbar_arrive(&sm.full[s]);
            }
        }
    }
}

// The exclusive prefix of the block's tile `ticket` (its k-th, in stage s), in every lane of the
// calling warp: the look-ahead warp, or (PIPE_LOOKAHEAD_WARP=0) the first scan warp.
// The design: `running` is the sum of tiles 0 .. start-1 for the block's previous tile `start`
// (0 and 0 before its first). The tiles between belong to other blocks, drawn just before ours,
// so they are loaded and reduced at about the same time as ours: one pass of reads usually
// finds them all with flag A. Nothing waits for any tile's prefix but its own block.
// The chain (PIPE_PUBLISH=1, as drill 05 and CUB do it): look back from ticket - 1, adding
// aggregates, to the nearest inclusive prefix (flag P), and publish this tile's own P: every
// tile's prefix now waits for its predecessor's look-back to have finished.
template <typename T>
struct RunningPrefix {
    T running = T(0);
    unsigned start = 0;
};
template <class P, typename T>
__device__ __forceinline__ T tile_prefix(PipeSmem<P, T>& sm, unsigned s, unsigned use, unsigned ticket,
                                         Descriptor* descriptors, unsigned epoch, RunningPrefix<T>& rp) {
    if constexpr (P::kChain) {
        mbar_wait(&sm.reduced[s], use & 1);  // this tile's aggregate, for the P it publishes
        T aggregate = T(0);
        for (int w = 0; w < P::kScanWarps; ++w) aggregate += sm.part[s][w];
        return lookback_exclusive_prefix<T>(descriptors, ticket, epoch, aggregate);  // tile 0: 0
    } else {
        const unsigned lane = threadIdx.x % 32;
        T sum = T(0);
        for (unsigned first = rp.start; first < ticket; first += 32 * kLookAheadWidth) {
            unsigned pending = 0;  // bit j: descriptor first + 32 j + lane still to be found ready
#pragma unroll
            for (int j = 0; j < kLookAheadWidth; ++j)
                if (first + 32 * j + lane < ticket) pending |= 1u << j;
            while (true) {
                Descriptor word[kLookAheadWidth];
#pragma unroll
                for (int j = 0; j < kLookAheadWidth; ++j)  // all loads first: one L2 round trip a pass
                    if ((pending >> j) & 1u) word[j] = load_descriptor(descriptors, first + 32 * j + lane);
#pragma unroll
                for (int j = 0; j < kLookAheadWidth; ++j) {
                    if (((pending >> j) & 1u) && descriptor_flag(word[j], epoch) == kFlagA) {
                        sum += descriptor_value<T>(word[j]);
                        pending &= ~(1u << j);
                    }
                }
                if (__all_sync(0xffffffffu, pending == 0)) break;  // warp-uniform: the warp stays together
                __nanosleep(kLookAheadSleepNs);
            }
        }
        rp.running += warp_sum(sum);
        rp.start = ticket;
        return rp.running;
    }
}

// The look-ahead warp: works on the block's tile k + 1 while the scan warps store tile k.
template <class P, typename T>
__device__ __forceinline__ void look_ahead(PipeSmem<P, T>& sm, Descriptor* descriptors, unsigned epoch) {
    const unsigned lane = threadIdx.x % 32;
    RunningPrefix<T> rp;
    for (unsigned k = 0;; ++k) {
        const unsigned s = k % P::kStages, use = k / P::kStages;
        mbar_wait(&sm.full[s], use & 1);
        const unsigned ticket = sm.ticket[s];
        if (ticket == kNoTile) return;
        const T prefix = tile_prefix<P>(sm, s, use, ticket, descriptors, epoch, rp);
        if (lane == 0) {
            sm.prefix[s] = prefix;
            mbar_arrive(&sm.prefix_ready[s]);
        }
    }
}

template <class P, typename T>
__device__ __forceinline__ void reduce(PipeSmem<P, T>& sm, Descriptor* descriptors, unsigned epoch) {
    using V = typename Vec4<T>::type;
    const unsigned lane = threadIdx.x % 32;
    for (unsigned k = 0;; ++k) {
        const unsigned s = k % P::kStages, use = k / P::kStages;
        mbar_wait(&sm.full[s], use & 1);
        const unsigned ticket = sm.ticket[s];
        if (ticket == kNoTile) return;
        const V* v = reinterpret_cast<const V*>(sm.stage[s]);
        T total = T(0);
#pragma unroll 1
        for (int w = 0; w < P::kScanWarps; ++w) {
            T acc[4] = {T(0), T(0), T(0), T(0)};
#pragma unroll
            for (int r = 0; r < P::kRounds; ++r) {
                const V q = v[(w * P::kRounds + r) * 32 + lane];
                acc[r % 4] += (q.x + q.y) + (q.z + q.w);
            }
            const T part = warp_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));
            if (lane == 0) sm.part[s][w] = part;
            total += part;
        }
        __syncwarp();
        if (lane == 0) {
            publish_descriptor(descriptors, ticket, kFlagA, epoch, total);  // at once: others' look-ahead waits on it
            mbar_arrive(&sm.reduced[s]);
            mbar_arrive(&sm.empty[s]);
        }
    }
}

// Scan warp w's part of every tile: kRounds rounds of 128 elements, kUnroll rounds at once
// (their warp scans are independent; only the carry chains them).
template <class P, typename T, bool kInclusive>
__device__ __forceinline__ void scan_store(PipeSmem<P, T>& sm, int w, T* __restrict__ out, size_t n,
                                           Descriptor* descriptors, unsigned epoch, unsigned* __restrict__ visits) {
    using V = typename Vec4<T>::type;
    const unsigned lane = threadIdx.x % 32;
    RunningPrefix<T> rp;  // PIPE_LOOKAHEAD_WARP=0 only: scan warp 0 keeps it
    int held = -1;  // bulk stores: the stage whose store may still be reading it (released one tile later)
    for (unsigned k = 0;; ++k) {
        const unsigned s = k % P::kStages, use = k / P::kStages;
        mbar_wait(&sm.full[s], use & 1);
        const unsigned ticket = sm.ticket[s];
        if (ticket == kNoTile) break;
        if (!P::kDedicatedLookAhead && w == 0) {  // the ablation: the prefix before the scan, in line
            const T prefix = tile_prefix<P>(sm, s, use, ticket, descriptors, epoch, rp);
            if (lane == 0) {
                sm.prefix[s] = prefix;
                mbar_arrive(&sm.prefix_ready[s]);
            }
            __syncwarp();
        }
        mbar_wait(&sm.reduced[s], use & 1);
        mbar_wait(&sm.prefix_ready[s], use & 1);
        T carry = sm.prefix[s];
        for (int j = 0; j < w; ++j) carry += sm.part[s][j];
        const size_t base = size_t(ticket) * P::kTile;
        const unsigned valid = unsigned(n - base < size_t(P::kTile) ? n - base : size_t(P::kTile));
        const bool full_tile = valid == unsigned(P::kTile);
        V* v = reinterpret_cast<V*>(sm.stage[s] + w * P::kPart);
#pragma unroll 1
        for (int r0 = 0; r0 < P::kRounds; r0 += P::kUnroll) {
            V q[P::kUnroll];
            T inclusive[P::kUnroll];
#pragma unroll
            for (int u = 0; u < P::kUnroll; ++u) q[u] = v[(r0 + u) * 32 + lane];
#pragma unroll
            for (int u = 0; u < P::kUnroll; ++u) inclusive[u] = warp_inclusive_scan((q[u].x + q[u].y) + (q[u].z + q[u].w), lane);
#pragma unroll
            for (int u = 0; u < P::kUnroll; ++u) {
                const T before_lane = __shfl_up_sync(0xffffffffu, inclusive[u], 1);
                T running = carry + (lane > 0 ? before_lane : T(0));
                T x[4] = {q[u].x, q[u].y, q[u].z, q[u].w};
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const T value = x[j];
                    if (kInclusive) running += value;
                    x[j] = running;
                    if (!kInclusive) running += value;
                }
                const V o = {x[0], x[1], x[2], x[3]};
                carry += __shfl_sync(0xffffffffu, inclusive[u], 31);
                const unsigned e = unsigned(w * P::kPart) + unsigned((r0 + u) * 32 + lane) * 4;  // in the tile
                if (P::kBulkStore && full_tile) {
                    v[(r0 + u) * 32 + lane] = o;  // in place; the bulk store below moves the part
                } else if (e + 4 <= valid) {
                    *reinterpret_cast<V*>(out + base + e) = o;
                } else {
                    for (int j = 0; j < 4; ++j)
                        if (e + j < valid) out[base + e + j] = x[j];
                }
            }
        }
        if (visits != nullptr && w == 0 && lane == 0) atomicAdd(&visits[ticket], 1u);
        if (P::kBulkStore && full_tile) {
            fence_proxy_async();
            __syncwarp();
            if (lane == 0) {
                bulk_store(out + base + w * P::kPart, v, unsigned(P::kPart * sizeof(T)));
                bulk_commit();
                bulk_wait_read<1>();  // the previous tile's store has read its stage: release that one
                if (held >= 0) mbar_arrive(&sm.empty[held]);
            }
            held = int(s);
        } else {
            __syncwarp();
            if (lane == 0) {
                if (held >= 0) {
                    bulk_wait_read<0>();
                    mbar_arrive(&sm.empty[held]);
                }
                mbar_arrive(&sm.empty[s]);
            }
            held = -1;
        }
    }
    if (lane == 0) {
        if (held >= 0) {
            bulk_wait_read<0>();
            mbar_arrive(&sm.empty[held]);
        }
        bulk_wait_all();  // the block's shared memory must outlive its stores
    }
}

// ---- GPU kernels: the kernel --------------------------------------------------------
// One block per SM. `counters` has two words; this launch draws from counters[parity] and
// zeroes counters[parity ^ 1] for the next (see the header). `visits` (may be null): every
// tile scanned adds one to its word there, for the bench's exactly-once check.
template <class P, typename T, bool kInclusive>
__global__ void __launch_bounds__(P::kThreads, 1)
    pipelined_scan(const T* __restrict__ in, T* __restrict__ out, size_t n, Descriptor* __restrict__ descriptors,
                   unsigned* __restrict__ counters, unsigned parity, unsigned epoch, unsigned* __restrict__ visits) {
    extern __shared__ __align__(128) unsigned char pipe_smem[];
    PipeSmem<P, T>& sm = *reinterpret_cast<PipeSmem<P, T>*>(pipe_smem);
    const int warp = int(threadIdx.x / 32);
    const unsigned tiles = unsigned((n + P::kTile - 1) / P::kTile);
    if (threadIdx.x == 0) {
        for (int s = 0; s < P::kStages; ++s) {
            mbar_init(&sm.full[s], 1);
            mbar_init(&sm.empty[s], P::kEmptyArrivals);
            mbar_init(&sm.reduced[s], 1);
            mbar_init(&sm.prefix_ready[s], 1);
        }
        fence_barrier_init();
        if (blockIdx.x == 0) atomicExch(&counters[parity ^ 1u], 0u);
    }
    __syncthreads();  // the only whole-block barrier: every mbarrier exists before anyone waits on one
    if (warp == P::kProducerWarp) {
        produce<P>(sm, in, n, tiles, &counters[parity]);
    } else if (warp == P::kLookAheadWarp) {
        if (P::kDedicatedLookAhead) look_ahead<P>(sm, descriptors, epoch);  // (else: the warp ends at once)
    } else if (warp == P::kReduceWarp) {
        reduce<P>(sm, descriptors, epoch);
    } else {
        scan_store<P, T, kInclusive>(sm, warp - P::kFirstScanWarp, out, n, descriptors, epoch, visits);
    }
}

// ---- host side: the state, the launcher and the dispatcher ---------------------------
using TunedPipe = PipeShape<PIPE_TILE_KIB * 1024, PIPE_STAGES, PIPE_SCAN_WARPS, PIPE_BULK_STORE != 0, PIPE_PUBLISH != 0,
                            PIPE_LOOKAHEAD_WARP != 0, PIPE_PERSISTENT != 0>;

// Everything a scan needs on the device besides its arrays: one descriptor per tile (shared
// by the classic and the pipelined kernel: each launch has its own epoch), the classic
// kernel's counter, the pipelined kernel's two counters. Zeroed at allocation.
struct ScanState {
    Descriptor* descriptors = nullptr;
    size_t capacity = 0;
    unsigned* classic_counter = nullptr;
    unsigned* pipe_counters = nullptr;
    unsigned epoch = 0;
    unsigned pipe_launches = 0;
    int sms = 0;

    cudaError_t reserve(size_t tiles) {
        cudaError_t err = cudaSuccess;
        if (sms == 0) {
            int device = 0;
            if ((err = cudaGetDevice(&device)) != cudaSuccess) return err;
            if ((err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return err;
        }
        if (classic_counter == nullptr) {
            if ((err = cudaMalloc(&classic_counter, 3 * sizeof(unsigned))) != cudaSuccess) return err;
            if ((err = cudaMemset(classic_counter, 0, 3 * sizeof(unsigned))) != cudaSuccess) return err;
            pipe_counters = classic_counter + 1;
        }
        if (tiles <= capacity) return cudaSuccess;
        if (descriptors != nullptr && (err = cudaFree(descriptors)) != cudaSuccess) return err;
        if ((err = cudaMalloc(&descriptors, tiles * sizeof(Descriptor))) != cudaSuccess) return err;
        if ((err = cudaMemset(descriptors, 0, tiles * sizeof(Descriptor))) != cudaSuccess) return err;
        capacity = tiles;
        epoch = 0;
        return cudaSuccess;
    }
    unsigned nextEpoch(cudaStream_t stream) {
        if (epoch == kPipeMaxEpoch) {  // before the 30 bits wrap: clear, so no old word can match
            cudaMemsetAsync(descriptors, 0, capacity * sizeof(Descriptor), stream);
            epoch = 0;
        }
        return ++epoch;
    }
    void release() {
        if (descriptors != nullptr) cudaFree(descriptors);
        if (classic_counter != nullptr) cudaFree(classic_counter);
        *this = ScanState{};
    }
};

// Once per shape and type, before the first launch: the ring is more than the default 48 KiB.
template <class P, typename T>
static cudaError_t pipelined_prepare() {
    for (const void* f : {reinterpret_cast<const void*>(pipelined_scan<P, T, false>),
                          reinterpret_cast<const void*>(pipelined_scan<P, T, true>)}) {
        const cudaError_t err =
            cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(PipeSmem<P, T>)));
        if (err != cudaSuccess) return err;
    }
    return cudaSuccess;
}

// The pipelined kernel alone (the bench forces it at every size). Grid: one block per SM, or
// one per tile when there are fewer tiles. Returns the grid (0: nothing launched). The
// counter this launch draws from is st.pipe_counters[(st.pipe_launches - 1) & 1] afterwards.
template <class P, typename T>
static unsigned pipelined_launch(bool inclusive, const T* in, T* out, size_t n, ScanState& st, cudaStream_t stream,
                                 unsigned* visits = nullptr) {
    if (n == 0) return 0;
    const size_t tiles = (n + P::kTile - 1) / P::kTile;
    const unsigned grid = unsigned(tiles < size_t(st.sms) || !P::kPersistent ? tiles : size_t(st.sms));
    const unsigned epoch = st.nextEpoch(stream);
    const unsigned parity = st.pipe_launches++ & 1u;
    const size_t smem = sizeof(PipeSmem<P, T>);
    if (inclusive) {
        pipelined_scan<P, T, true><<<grid, P::kThreads, smem, stream>>>(in, out, n, st.descriptors, st.pipe_counters,
                                                                         parity, epoch, visits);
    } else {
        pipelined_scan<P, T, false><<<grid, P::kThreads, smem, stream>>>(in, out, n, st.descriptors, st.pipe_counters,
                                                                          parity, epoch, visits);
    }
    return grid;
}

// The classic look-back (drill 05's answer, its tuned shape), one block a tile.
template <typename T>
static void classic_launch(bool inclusive, const T* in, T* out, size_t n, ScanState& st, cudaStream_t stream) {
    if (n == 0) return;
    const unsigned tiles = unsigned((n + TunedShape::kTile - 1) / TunedShape::kTile);
    const unsigned epoch = st.nextEpoch(stream);
    if (inclusive) {
        lookback_scan<TunedShape, T, true><<<tiles, TunedShape::kThreads, 0, stream>>>(in, out, n, st.descriptors,
                                                                                      st.classic_counter, epoch);
    } else {
        lookback_scan<TunedShape, T, false><<<tiles, TunedShape::kThreads, 0, stream>>>(in, out, n, st.descriptors,
                                                                                       st.classic_counter, epoch);
    }
}

// Which kernel the dispatcher runs for n (and these pointers): the pipelined one from the
// crossover up, when both arrays are 16-byte aligned (the bulk copies' rule).
template <typename T>
static bool uses_pipelined(const T* in, const T* out, size_t n) {
    const bool aligned = (reinterpret_cast<size_t>(in) | reinterpret_cast<size_t>(out)) % 16 == 0;
    return n >= kPipelinedMinN && aligned;
}

// The scan to call: exclusive or inclusive, float32 or int32. st.reserve(tiles of the classic
// shape for the largest n) first, and pipelined_prepare<TunedPipe, T>() once.
template <typename T>
static void scan_dispatch(bool inclusive, const T* in, T* out, size_t n, ScanState& st, cudaStream_t stream = 0) {
    if (uses_pipelined(in, out, n)) {
        pipelined_launch<TunedPipe>(inclusive, in, out, n, st, stream);
    } else {
        classic_launch(inclusive, in, out, n, st, stream);
    }
}
