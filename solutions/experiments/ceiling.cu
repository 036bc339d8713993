// The ceiling a scan is measured against, and where drill 05's tile spends its time.
//
// Three measurements at n = 2^28 4-byte elements (1 GiB read, 1 GiB written), one run:
//   1. stream_copy: a persistent SM copy kernel (grid = blocks/SM x SMs, 256 threads, each
//      thread moving `unroll` vectors of 4, 8 or 16 bytes per step, loads first, then stores),
//      swept over the bytes in flight per SM, 4-64 KiB (blocks/SM x 256 x unroll x width);
//      with cudaMemcpyAsync device to device beside it. Little's law turns each row into a
//      loaded latency: latency = bytes in flight on the GPU / read bandwidth.
//   2. bulk_ring_copy: the pipelined scan's data path alone (solutions/pipelined_scan.cu): one
//      block per SM, one thread loading tiles with cp.async.bulk into a ring of stages (full /
//      empty mbarriers), one warp storing each stage back with a bulk store; swept over stages x
//      tile KiB. If this does not reach 0.9 of the copy, the pipelined scan can not either.
//   3. lookback_scan_timeline: the classic kernel instrumented (drill 05's answer,
//      ../05_lookback_scan.cu, through its body with hooks, 05_lookback_hooked.cuh, which the
//      variants file runs too; the student files are untouched): it stamps every tile with
//      %globaltimer and clock64 at: ticket drawn, tile loaded and reduced (after the block's
//      second barrier), aggregate published, prefix known, outputs stored (issued), and counts
//      its look-back window reads and retries. It prints the median, 10th and 90th percentile
//      of each phase. The variants file's staged tile is not instrumented here: the answer's
//      register tile only.
//
// Build (from solutions/experiments/):
//   nvcc -std=c++17 -O3 -arch=sm_90 -lineinfo -Xcompiler -Wall,-Wextra -o ceiling ceiling.cu
// Run:
//   ./ceiling                  all three parts at n = 2^28, 10 timed repetitions each
//   ./ceiling --reps 20        more repetitions (median reported)
//   ./ceiling --log2 26        a smaller n (still well past the 50 MiB L2 from 2^24 up)
//   ./ceiling --no-timeline    parts 1 and 2 only
//   ./ceiling --help
// Observe: the "copy" line at the end of part 1 is the better of cudaMemcpyAsync and the best
// SM copy: the denominator of every "of copy" from now on. The in-flight KiB at which the SM
// copy first reaches 0.90 of that is what a scan must keep in flight per SM. In part 3, if
// "published -> prefix known" dominates a tile's time, the look-back is the wall (the pipelined
// design is the fix); if "drawn -> loaded" does, loading is.
// Exit status: 0 measured (and every copy checked), 1 a CUDA error or a copy came out wrong,
// 2 bad command line, 3 no usable GPU.

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;
constexpr const char* kProgram = "ceiling";  // error lines start with it

// Every runtime call goes through this: the failing expression, where, and why.
#define CUDA_CHECK(call)                                                          \
    do {                                                                          \
        const cudaError_t err_ = (call);                                          \
        if (err_ != cudaSuccess) {                                                \
            std::fprintf(stderr, "%s: CUDA error %s (%s) in %s at %s:%d\n",       \
                         kProgram, cudaGetErrorName(err_), cudaGetErrorString(err_), \
                         #call, __FILE__, __LINE__);                              \
            std::exit(kExitFail);                                                 \
        }                                                                         \
    } while (0)
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// The pipelined scan, for its mbarrier and cp.async.bulk wrappers; it #includes drill 05's
// answer (the classic kernel, TunedShape, the descriptors and helpers). Then the classic
// kernel's body with hooks, which part 3 instruments.
#include "../pipelined_scan.cu"
#include "05_lookback_hooked.cuh"

struct Mismatch {
    size_t count = 0;
    size_t first = 0;
    float expected = 0.0f;
    float actual = 0.0f;
};

// A row of the flag table parseFlags (in the plumbing block) reads: --name, a value or not, what it sets.
struct Flag { const char* name; bool takes_value; std::function<void(const std::string&)> set; };

// The host plumbing this file uses, defined in the block at its end (identical in every
// CUDA lesson file).
static void printUsage(FILE* to);
[[maybe_unused]] static uint64_t splitmix64(uint64_t& state);
[[maybe_unused]] static unsigned long long numberFlag(const std::string&, unsigned long long, unsigned long long, bool, const char*);
template <typename Table> static void parseFlags(int argc, char** argv, const Table& flags);
[[noreturn]] [[maybe_unused]] static void usageError(const char* fmt, const char* what);
[[noreturn]] [[maybe_unused]] static void noGpu(const char* why, cudaError_t err);
[[maybe_unused]] static std::string fmt(const char* format, double value);
[[maybe_unused]] static std::string num(unsigned long long value);
[[maybe_unused]] static void printTable(const std::vector<std::string>& header,
                                        const std::vector<std::vector<std::string>>& rows);
[[maybe_unused]] static float median(std::vector<float> values);
[[maybe_unused]] static double gbPerSecond(double bytes, double ms);
[[maybe_unused]] static cudaDeviceProp openDevice(const void* probe);
[[maybe_unused]] static Mismatch compareExact(const std::vector<float>& expected, const std::vector<float>& actual);
template <typename Enqueue>
static float medianMs(int warmups, int reps, Enqueue&& enqueue);

constexpr int kCopyThreads = 256;
constexpr int kWarmups = 2;

// ---- GPU kernels: the SM copy -----------------------------------------------------
//
// Persistent: the grid is blocks/SM x SMs and strides over the array in steps of
// kUnroll * 256 vectors a block. Every thread issues its kUnroll loads before any store,
// so a block has 256 * kUnroll * sizeof(V) bytes of loads in flight; vector i of a step
// is vector tid + i * 256 of the block's chunk, so every warp access is coalesced.
template <int kUnroll, typename V>
__global__ void __launch_bounds__(kCopyThreads) stream_copy(const V* __restrict__ in, V* __restrict__ out, size_t count) {
    const size_t step = size_t(gridDim.x) * kCopyThreads * kUnroll;
    size_t i = size_t(blockIdx.x) * kCopyThreads * kUnroll + threadIdx.x;
    for (; i + size_t(kUnroll - 1) * kCopyThreads < count; i += step) {
        V r[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) r[u] = in[i + size_t(u) * kCopyThreads];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) out[i + size_t(u) * kCopyThreads] = r[u];
    }
    for (int u = 0; u < kUnroll; ++u) {  // the last, partial step
        if (i + size_t(u) * kCopyThreads < count) out[i + size_t(u) * kCopyThreads] = in[i + size_t(u) * kCopyThreads];
    }
}

// ---- GPU kernels: the bulk-copy ring (the pipelined scan's data path) -----------------
//
// The mbarrier and cp.async.bulk wrappers are ../pipelined_scan.cu's (there with the
// reasons). full[s]: the producer's arrive.expect_tx plus the bulk load's bytes complete it;
// empty[s]: the storing warp's lane 0 arrives once its bulk store has finished READING the
// stage (cp.async.bulk.wait_group.read), so the next load may overwrite it.
//
// Tile k of block b is tile b + k * gridDim.x (a copy needs no order); `tile_bytes` a
// multiple of 16 and `bytes` of tile_bytes (the host picks n so). 64 threads: warp 0's lane 0
// loads, warp 1's lane 0 stores.
__global__ void __launch_bounds__(64) bulk_ring_copy(const char* __restrict__ in, char* __restrict__ out, size_t bytes,
                                                     unsigned tile_bytes, unsigned stages) {
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ unsigned long long full[16], empty[16];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (threadIdx.x == 0) {
        for (unsigned s = 0; s < stages; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], 1);
        fence_barrier_init();
    }
    __syncthreads();
    const size_t tiles = bytes / tile_bytes;
    if (lane != 0) return;
    unsigned k = 0;
    for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++k) {
        const unsigned s = k % stages, use = k / stages;
        unsigned char* stage = ring + size_t(s) * tile_bytes;
        if (warp == 0) {
            if (use > 0) mbar_wait(&empty[s], (use - 1) & 1);
            mbar_arrive_expect_tx(&full[s], tile_bytes);
            bulk_load(stage, in + tile * tile_bytes, tile_bytes, &full[s]);
        } else {
            mbar_wait(&full[s], use & 1);
            bulk_store(out + tile * tile_bytes, stage, tile_bytes);
            bulk_commit();
            // Release the PREVIOUS stage once its store has read it: one store stays in flight.
            bulk_wait_read<1>();
            if (k > 0) mbar_arrive(&empty[(k - 1) % stages]);
        }
    }
    if (warp == 1) bulk_wait_all();
}

// ---- GPU kernels: the classic kernel, instrumented --------------------------------
//
// lookback_scan from ../05_lookback_scan.cu, run through its body with hooks
// (05_lookback_hooked.cuh: the answer's tile and pauses), where thread 0 stamps the tile at
// five points and warp 0's lanes count their look-back window reads and retries.
enum Stamp { kDrawn, kLoaded, kPublished, kPrefixKnown, kStored, kStamps };

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

struct TimelineHooks : QuietHooks<kFirstSleepNs, kSpinSleepNs> {
    unsigned long long* ns;  // kStamps a tile, from the stores' stamp on
    long long* cycles;
    unsigned* reads_retries;  // 2 a tile: lane 0's window reads and retries
    unsigned long long t_ns[kStamps];
    long long t_cy[kStamps];
    unsigned reads = 0, retries = 0;

    __device__ __forceinline__ TimelineHooks(unsigned long long* ns_, long long* cycles_, unsigned* reads_retries_)
        : ns(ns_), cycles(cycles_), reads_retries(reads_retries_) {}
    __device__ __forceinline__ void stamp(Stamp k) { t_ns[k] = global_ns(), t_cy[k] = clock64(); }
    __device__ __forceinline__ void drawn() { stamp(kDrawn); }
    __device__ __forceinline__ void loaded() { stamp(kLoaded); }
    __device__ __forceinline__ void published() { stamp(kPublished); }
    __device__ __forceinline__ void prefix_known() { stamp(kPrefixKnown); }
    __device__ __forceinline__ void window_read() { ++reads; }
    __device__ __forceinline__ void retry() { ++retries; }
    __device__ __forceinline__ void stored(unsigned int tile) {
        stamp(kStored);
        for (int k = 0; k < kStamps; ++k) ns[size_t(tile) * kStamps + k] = t_ns[k], cycles[size_t(tile) * kStamps + k] = t_cy[k];
        reads_retries[2 * size_t(tile)] = reads;
        reads_retries[2 * size_t(tile) + 1] = retries;
    }
};

template <class S, typename T, bool kInclusive>
__global__ void __launch_bounds__(S::kThreads)
    lookback_scan_timeline(const T* __restrict__ in, T* __restrict__ out, size_t n, Descriptor* __restrict__ descriptors,
                           unsigned int* __restrict__ tile_counter, unsigned int epoch,
                           unsigned long long* __restrict__ ns, long long* __restrict__ cycles,
                           unsigned* __restrict__ reads_retries) {
    TimelineHooks hooks(ns, cycles, reads_retries);
    scan_one_tile<kInclusive, RegisterTile<S, T>>(in, out, n, descriptors, tile_counter, epoch, hooks);
}

// ---- host side -----------------------------------------------------------------

struct Options {
    int log2n = 28;
    int reps = 10;
    bool timeline = true;
};

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: ceiling [--log2 K] [--reps R] [--no-timeline] [--help]\n"
                 "  --log2 K       n = 2^K 4-byte elements, K from 20 to 28 (default 28)\n"
                 "  --reps R       timed repetitions, median reported, 1..1000 (default 10)\n"
                 "  --no-timeline  skip part 3, the classic kernel's per-tile timeline\n");
}

static Options parseOptions(int argc, char** argv) {
    Options opt;
    const Flag flags[] = {
        {"--log2", true, [&](const std::string& v) { opt.log2n = int(numberFlag(v, 20, 28, false, "--log2 wants 20..28, not '%s'")); }},
        {"--reps", true, [&](const std::string& v) { opt.reps = int(numberFlag(v, 1, 1000, false, "--reps wants 1..1000, not '%s'")); }},
        {"--no-timeline", false, [&](const std::string&) { opt.timeline = false; }},
    };
    parseFlags(argc, argv, flags);
    return opt;
}

// The copy must be right before its time means anything: every word against the input's
// pattern, on the device (a 1 GiB copy back per row would cost more than the whole sweep).
__global__ void fill_pattern(unsigned* p, size_t words) {
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
        p[i] = unsigned(i * 2654435761u);
}
__global__ void count_wrong(const unsigned* p, size_t words, unsigned long long* wrong, unsigned long long* first) {
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x) {
        if (p[i] != unsigned(i * 2654435761u)) {
            atomicAdd(wrong, 1ull);
            atomicMin(first, (unsigned long long)i);
        }
    }
}

static unsigned long long* g_wrong = nullptr;  // [0] count, [1] first index
static int g_sms = 1;

static bool copiedRight(const unsigned* d_out, size_t words, const char* what) {
    const unsigned long long init[2] = {0, ~0ull};
    CUDA_CHECK(cudaMemcpy(g_wrong, init, sizeof init, cudaMemcpyHostToDevice));
    count_wrong<<<unsigned(4 * g_sms), 256>>>(d_out, words, g_wrong, g_wrong + 1);
    CUDA_CHECK_LAUNCH();
    unsigned long long h[2];
    CUDA_CHECK(cudaMemcpy(h, g_wrong, sizeof h, cudaMemcpyDeviceToHost));
    if (h[0] == 0) return true;
    unsigned got = 0;
    CUDA_CHECK(cudaMemcpy(&got, d_out + h[1], sizeof got, cudaMemcpyDeviceToHost));
    std::printf("%s: %llu words wrong; first: word %llu is %u, should be %u\n", what, h[0], h[1], got,
                unsigned(h[1] * 2654435761u));
    return false;
}

struct CopyRow {
    std::string kernel;
    int blocks_per_sm, unroll, width;
    double kib_per_sm, ms, gbs;
};

template <int kUnroll, typename V>
static CopyRow timeStreamCopy(int blocks_per_sm, const Options& opt, int sms, const void* in, void* out, size_t bytes,
                              bool& ok) {
    const size_t count = bytes / sizeof(V);
    const unsigned grid = unsigned(blocks_per_sm * sms);
    CUDA_CHECK(cudaMemset(out, 0, bytes));
    const float ms = medianMs(kWarmups, opt.reps, [&] {
        stream_copy<kUnroll, V><<<grid, kCopyThreads>>>(static_cast<const V*>(in), static_cast<V*>(out), count);
        CUDA_CHECK_LAUNCH();
    });
    CopyRow r{"SM copy", blocks_per_sm, kUnroll, int(sizeof(V)),
              double(blocks_per_sm) * kCopyThreads * kUnroll * sizeof(V) / 1024.0, ms, gbPerSecond(2.0 * bytes, ms)};
    ok = copiedRight(static_cast<const unsigned*>(out), bytes / 4, "stream_copy") && ok;
    return r;
}

static int attribute(cudaDeviceAttr what) {
    int value = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&value, what, 0));
    return value;
}

// The per-tile timeline of the classic kernel at n (float32 exclusive), and its plain time.
static void runTimeline(size_t n, const Options& opt, void* in, void* out) {
    using S = TunedShape;
    const size_t tiles = (n + S::kTile - 1) / S::kTile;
    Descriptor* descriptors;
    unsigned *counter, *rr;
    unsigned long long* ns;
    long long* cy;
    CUDA_CHECK(cudaMalloc(&descriptors, tiles * sizeof(Descriptor)));
    CUDA_CHECK(cudaMemset(descriptors, 0, tiles * sizeof(Descriptor)));
    CUDA_CHECK(cudaMalloc(&counter, sizeof(unsigned)));
    CUDA_CHECK(cudaMemset(counter, 0, sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&ns, tiles * kStamps * sizeof(unsigned long long)));
    CUDA_CHECK(cudaMalloc(&cy, tiles * kStamps * sizeof(long long)));
    CUDA_CHECK(cudaMalloc(&rr, tiles * 2 * sizeof(unsigned)));
    // Small integers as floats (0 or 1 on every 16th element: the total stays exact).
    std::vector<float> h(n, 0.0f);
    for (size_t i = 0; i < n; i += 16) h[i] = 1.0f;
    CUDA_CHECK(cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    unsigned epoch = 0;
    const float * d_in = static_cast<const float*>(in);
    float* d_out = static_cast<float*>(out);
    const float plain_ms = medianMs(kWarmups, opt.reps, [&] {
        lookback_scan<S, float, false><<<unsigned(tiles), S::kThreads>>>(d_in, d_out, n, descriptors, counter, ++epoch);
        CUDA_CHECK_LAUNCH();
    });
    const float timed_ms = medianMs(kWarmups, opt.reps, [&] {
        lookback_scan_timeline<S, float, false>
            <<<unsigned(tiles), S::kThreads>>>(d_in, d_out, n, descriptors, counter, ++epoch, ns, cy, rr);
        CUDA_CHECK_LAUNCH();
    });
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> result(n);
    CUDA_CHECK(cudaMemcpy(result.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = n;
    double running = 0;
    for (size_t i = 0; i < n && bad == n; ++i) {
        if (result[i] != float(running)) bad = i;
        running += h[i];
    }
    std::vector<unsigned long long> hns(tiles * kStamps);
    std::vector<long long> hcy(tiles * kStamps);
    std::vector<unsigned> hrr(tiles * 2);
    CUDA_CHECK(cudaMemcpy(hns.data(), ns, hns.size() * sizeof(hns[0]), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hcy.data(), cy, hcy.size() * sizeof(hcy[0]), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hrr.data(), rr, hrr.size() * sizeof(hrr[0]), cudaMemcpyDeviceToHost));

    std::printf("Part 3: the classic kernel's tile timeline, n = %zu float32 exclusive, %d x %d = %d-element tiles, %zu tiles\n",
                n, S::kThreads, S::kItems, S::kTile, tiles);
    std::printf("        plain kernel %.4f ms (%.1f GB/s); instrumented %.4f ms (%.1f GB/s); the instrumented output %s\n",
                plain_ms, gbPerSecond(8.0 * n, plain_ms), timed_ms, gbPerSecond(8.0 * n, timed_ms),
                bad == n ? "is exact" : ("is WRONG from element " + num(bad)).c_str());
    // %globaltimer's resolution on this GPU: the smallest nonzero step between two stamps of a tile.
    unsigned long long resolution = ~0ull;
    for (size_t t = 0; t < tiles; ++t)
        for (int k = 1; k < kStamps; ++k) {
            const unsigned long long d = hns[t * kStamps + k] - hns[t * kStamps + k - 1];
            if (d > 0 && d < resolution) resolution = d;
        }
    const char* names[kStamps - 1] = {"drawn -> loaded", "loaded -> published", "published -> prefix known",
                                      "prefix known -> stored"};
    std::vector<std::vector<std::string>> rows;
    auto pct = [](std::vector<double> v, double q) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[std::min(v.size() - 1, size_t(q * double(v.size())))];
    };
    double total_median = 0;
    std::vector<double> phase_median(kStamps, 0.0);
    for (int k = 0; k <= kStamps - 1; ++k) {
        const int from = k < kStamps - 1 ? k : 0, to = k < kStamps - 1 ? k + 1 : kStamps - 1;
        std::vector<double> dns, dcy;
        for (size_t t = 1; t < tiles; ++t) {  // tile 0 has no look-back
            dns.push_back(double(hns[t * kStamps + to] - hns[t * kStamps + from]));
            dcy.push_back(double(hcy[t * kStamps + to] - hcy[t * kStamps + from]));
        }
        const double med = pct(dns, 0.5);
        if (k < kStamps - 1) phase_median[k] = med; else total_median = med;
        rows.push_back({k < kStamps - 1 ? names[k] : "drawn -> stored (whole tile)", fmt("%.0f", med),
                        fmt("%.0f", pct(dns, 0.1)), fmt("%.0f", pct(dns, 0.9)), fmt("%.0f", pct(dcy, 0.5)),
                        fmt("%.0f", pct(dcy, 0.9))});
    }
    printTable({"phase (tiles 1..)", "median ns", "p10 ns", "p90 ns", "median cycles", "p90 cycles"}, rows);
    std::vector<double> reads, retries;
    size_t with_retry = 0;
    for (size_t t = 1; t < tiles; ++t) {
        reads.push_back(hrr[2 * t]), retries.push_back(hrr[2 * t + 1]);
        with_retry += hrr[2 * t + 1] > 0;
    }
    // The draw rate: tickets drawn per microsecond over the middle 80% of the run.
    std::vector<unsigned long long> drawn;
    for (size_t t = 0; t < tiles; ++t) drawn.push_back(hns[t * kStamps + kDrawn]);
    std::sort(drawn.begin(), drawn.end());
    const size_t lo = tiles / 10, hi = tiles - 1 - tiles / 10;
    const double rate = hi > lo ? double(hi - lo) / (double(drawn[hi] - drawn[lo]) / 1000.0) : 0.0;
    std::printf("look-back window reads a tile: median %.0f, p90 %.0f; retries: median %.0f, p90 %.0f; tiles that retried: %.1f%%\n",
                pct(reads, 0.5), pct(reads, 0.9), pct(retries, 0.5), pct(retries, 0.9), 100.0 * with_retry / double(tiles));
    std::printf("tickets drawn: %.1f tiles/us (middle 80%% of the run) = %.2f TB/s of tile data read+written;\n"
                "%%globaltimer step seen: %llu ns (clock64 columns are SM cycles at up to %d MHz)\n",
                rate, rate * S::kTile * 8.0 / 1e6, resolution, attribute(cudaDevAttrClockRate) / 1000);
    int widest = 0;
    for (int k = 1; k < kStamps - 1; ++k) if (phase_median[k] > phase_median[widest]) widest = k;
    std::printf("largest phase: %s, %.0f%% of the median tile's %.0f ns\n\n", names[widest],
                total_median > 0 ? 100.0 * phase_median[widest] / total_median : 0.0, total_median);
    CUDA_CHECK(cudaFree(descriptors));
    CUDA_CHECK(cudaFree(counter));
    CUDA_CHECK(cudaFree(ns));
    CUDA_CHECK(cudaFree(cy));
    CUDA_CHECK(cudaFree(rr));
}

// ---- main ----------------------------------------------------------------------

int main(int argc, char** argv) {
    const Options opt = parseOptions(argc, argv);
    const cudaDeviceProp prop = openDevice(reinterpret_cast<const void*>(stream_copy<1, int4>));
    const int sms = prop.multiProcessorCount;
    const size_t n = size_t(1) << opt.log2n;
    const size_t bytes = n * 4;
    std::printf("GPU: %s (compute capability %d.%d), %d SMs, L2 %d MiB, %.0f GB/s theoretical DRAM (bus x clock)\n",
                prop.name, prop.major, prop.minor, sms, prop.l2CacheSize >> 20,
                2.0 * attribute(cudaDevAttrMemoryClockRate) * 1e3 * (prop.memoryBusWidth / 8) / 1e9);
    std::printf("n = 2^%d 4-byte elements: %zu MiB read + %zu MiB written a copy; median of %d after %d warm-ups, events\n\n",
                opt.log2n, bytes >> 20, bytes >> 20, opt.reps, kWarmups);

    void *in, *out;
    g_sms = sms;
    CUDA_CHECK(cudaMalloc(&g_wrong, 2 * sizeof(unsigned long long)));
    CUDA_CHECK(cudaMalloc(&in, bytes));
    CUDA_CHECK(cudaMalloc(&out, bytes));
    fill_pattern<<<unsigned(4 * sms), 256>>>(static_cast<unsigned*>(in), n);
    CUDA_CHECK_LAUNCH();
    bool ok = true;

    // Part 1: cudaMemcpyAsync and the SM copy against bytes in flight.
    CUDA_CHECK(cudaMemset(out, 0, bytes));
    const float memcpy_ms = medianMs(kWarmups, opt.reps, [&] {
        CUDA_CHECK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice));
    });
    ok = copiedRight(static_cast<const unsigned*>(out), n, "cudaMemcpyAsync") && ok;
    const double memcpy_gbs = gbPerSecond(2.0 * bytes, memcpy_ms);
    std::vector<CopyRow> copies;
    // 16-byte vectors: blocks/SM x unroll over 4..64 KiB in flight a SM.
    for (int b : {1, 2, 4, 8}) {
        if (b * 1 * 4 <= 64) copies.push_back(timeStreamCopy<1, int4>(b, opt, sms, in, out, bytes, ok));
        if (b * 2 * 4 <= 64) copies.push_back(timeStreamCopy<2, int4>(b, opt, sms, in, out, bytes, ok));
        if (b * 4 * 4 <= 64) copies.push_back(timeStreamCopy<4, int4>(b, opt, sms, in, out, bytes, ok));
        if (b * 8 * 4 <= 64) copies.push_back(timeStreamCopy<8, int4>(b, opt, sms, in, out, bytes, ok));
        if (b * 16 * 4 <= 64) copies.push_back(timeStreamCopy<16, int4>(b, opt, sms, in, out, bytes, ok));
    }
    // Narrower vectors at 8 blocks/SM: the same bytes in flight with more instructions.
    copies.push_back(timeStreamCopy<2, int2>(8, opt, sms, in, out, bytes, ok));
    copies.push_back(timeStreamCopy<4, int2>(8, opt, sms, in, out, bytes, ok));
    copies.push_back(timeStreamCopy<8, int2>(8, opt, sms, in, out, bytes, ok));
    copies.push_back(timeStreamCopy<4, int>(8, opt, sms, in, out, bytes, ok));
    copies.push_back(timeStreamCopy<8, int>(8, opt, sms, in, out, bytes, ok));
    copies.push_back(timeStreamCopy<16, int>(8, opt, sms, in, out, bytes, ok));
    std::sort(copies.begin(), copies.end(), [](const CopyRow& a, const CopyRow& b) {
        return a.kib_per_sm != b.kib_per_sm ? a.kib_per_sm < b.kib_per_sm : a.gbs < b.gbs;
    });
    double best_sm = 0;
    for (const CopyRow& r : copies) best_sm = std::max(best_sm, r.gbs);
    const double copy_gbs = std::max(best_sm, memcpy_gbs);
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"cudaMemcpyAsync", "-", "-", "-", "-", fmt("%.4f", memcpy_ms), fmt("%.1f", memcpy_gbs),
                    fmt("%.3f", memcpy_gbs / copy_gbs), "-"});
    for (const CopyRow& r : copies) {
        // Little's law on the reads: bytes of loads in flight on the whole GPU / read bandwidth.
        const double latency_ns = r.kib_per_sm * 1024.0 * sms / (r.gbs / 2.0);
        rows.push_back({r.kernel, num(unsigned(r.blocks_per_sm)), num(unsigned(r.unroll)), num(unsigned(r.width)),
                        fmt("%.0f", r.kib_per_sm), fmt("%.4f", r.ms), fmt("%.1f", r.gbs), fmt("%.3f", r.gbs / copy_gbs),
                        fmt("%.0f", latency_ns)});
    }
    std::printf("Part 1: copy against bytes in flight (GB/s counts bytes read + bytes written)\n");
    printTable({"kernel", "blocks/SM", "unroll", "bytes/vec", "KiB in flight/SM", "ms", "GB/s", "of copy",
                "implied latency ns"},
               rows);
    double need_kib = -1;
    for (const CopyRow& r : copies) {
        if (r.gbs >= 0.9 * copy_gbs) {
            need_kib = r.kib_per_sm;
            break;
        }
    }
    std::printf("copy = %.1f GB/s (%s); 0.90 of it = %.1f GB/s = %.2f GB/s a SM; the SM copy first reaches it at %s KiB in flight a SM\n\n",
                copy_gbs, best_sm > memcpy_gbs ? "the SM copy" : "cudaMemcpyAsync", 0.9 * copy_gbs, 0.9 * copy_gbs / sms,
                need_kib < 0 ? "no swept" : fmt("%.0f", need_kib).c_str());

    // Part 2: the bulk-copy ring, one block per SM.
    // The opt-in limit covers static and dynamic shared memory together: the kernel's own
    // mbarriers (its static __shared__) come off what the ring may take.
    cudaFuncAttributes ring_attr{};
    CUDA_CHECK(cudaFuncGetAttributes(&ring_attr, bulk_ring_copy));
    const size_t ring_max = prop.sharedMemPerBlockOptin - ring_attr.sharedSizeBytes;
    CUDA_CHECK(cudaFuncSetAttribute(bulk_ring_copy, cudaFuncAttributeMaxDynamicSharedMemorySize, int(ring_max)));
    std::vector<std::vector<std::string>> ring_rows;
    double best_ring = 0;
    for (unsigned tile_kib : {8u, 16u, 32u, 48u}) {
        for (unsigned stages : {2u, 3u, 4u, 6u, 8u, 12u}) {
            const size_t smem = size_t(tile_kib) * 1024 * stages;
            if (smem > ring_max || smem > 200 * 1024) continue;
            const unsigned tile_bytes = tile_kib * 1024;
            const size_t ring_bytes = bytes / tile_bytes * tile_bytes;
            CUDA_CHECK(cudaMemset(out, 0, bytes));
            const float ms = medianMs(kWarmups, opt.reps, [&] {
                bulk_ring_copy<<<unsigned(sms), 64, smem>>>(static_cast<const char*>(in), static_cast<char*>(out), ring_bytes,
                                                             tile_bytes, stages);
                CUDA_CHECK_LAUNCH();
            });
            ok = copiedRight(static_cast<const unsigned*>(out), ring_bytes / 4, "bulk_ring_copy") && ok;
            const double gbs = gbPerSecond(2.0 * ring_bytes, ms);
            best_ring = std::max(best_ring, gbs);
            ring_rows.push_back({num(tile_kib), num(stages), num(unsigned(smem / 1024)), fmt("%.4f", ms), fmt("%.1f", gbs),
                                 fmt("%.3f", gbs / copy_gbs)});
        }
    }
    std::printf("Part 2: bulk-copy ring (1 block/SM, cp.async.bulk load -> stage -> bulk store)\n");
    printTable({"tile KiB", "stages", "ring KiB", "ms", "GB/s", "of copy"}, ring_rows);
    std::printf("best bulk ring: %.1f GB/s = %.3f of copy\n\n", best_ring, best_ring / copy_gbs);

    if (opt.timeline) runTimeline(n, opt, in, out);

    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(out));
    CUDA_CHECK(cudaFree(g_wrong));
    std::printf("ceiling: copy %.1f GB/s (memcpy %.1f, best SM copy %.1f, best bulk ring %.1f)%s\n", copy_gbs, memcpy_gbs,
                best_sm, best_ring, ok ? "" : "; A COPY CAME OUT WRONG");
    return ok ? kExitPass : kExitFail;
}

// ==== plumbing, identical in every CUDA lesson file ==================================
//
// The host helpers every lesson program needs and none teaches: the input generator,
// reading numbers off the command line, the two ways of giving up (a bad command line,
// no usable GPU), opening the device, and printing. The block is the same text in every CUDA lesson file,
// so a change here goes into all of them; harness/test_scanlab.py fails when the copies
// differ. A lesson names what it uses from here in its declarations near the top.

// splitmix64 rather than <random>: the same seed gives the same data with every
// compiler and standard library, so a failing seed reproduces anywhere.
[[maybe_unused]] static uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// A seed from the clock when --pattern random comes without --seed (the program prints it).
[[maybe_unused]] static uint64_t clockSeed() {
    uint64_t state = uint64_t(std::time(nullptr)) ^ uint64_t(std::clock()) << 32;
    return splitmix64(state) % 1000000;  // short enough to retype
}

// Whole decimal numbers only: "12abc", "-1", "" and overflow are all errors.
[[maybe_unused]] static bool parseUnsigned(const char* text, unsigned long long max, unsigned long long& value) {
    if (text == nullptr || *text == '\0') return false;
    for (const char* p = text; *p; ++p) {
        if (*p < '0' || *p > '9') return false;
    }
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (errno == ERANGE || *end != '\0' || v > max) return false;
    value = v;
    return true;
}

[[maybe_unused]] static bool isPowerOfTwo(unsigned long long x) { return x != 0 && (x & (x - 1)) == 0; }

// A bad command line: what is wrong, then the usage, and status 2.
[[noreturn]] [[maybe_unused]] static void usageError(const char* fmt, const char* what) {
    std::fprintf(stderr, "%s: ", kProgram);
    std::fprintf(stderr, fmt, what);
    std::fprintf(stderr, "\n\n");
    printUsage(stderr);
    std::exit(kExitUsage);
}

// A flag's whole-number value from `min` to `max` (a power of two where asked), or the
// complaint (%s is the value) and status 2.
[[maybe_unused]] static unsigned long long numberFlag(const std::string& v, unsigned long long min,
                                                      unsigned long long max, bool power_of_two, const char* complaint) {
    unsigned long long x = 0;
    if (!parseUnsigned(v.c_str(), max, x) || x < min || (power_of_two && !isPowerOfTwo(x))) usageError(complaint, v.c_str());
    return x;
}

// Which of `names` a flag's value is, by its index, or the complaint and status 2.
[[maybe_unused]] static int choiceFlag(const std::string& v, const std::vector<std::string>& names, const char* complaint) {
    for (size_t k = 0; k < names.size(); ++k) {
        if (v == names[k]) return int(k);
    }
    usageError(complaint, v.c_str());
}

// The command line read against a table of flags, each {name, takes a value, what it sets},
// in the order given: `--flag value` or `--flag=value`. --help (or -h) prints the usage and
// exits 0; a flag not in the table, without its value, or with one it does not take, is a
// usage error.
template <typename Table>
static void parseFlags(int argc, char** argv, const Table& flags) {
    for (int a = 1; a < argc; ++a) {
        std::string flag = argv[a];
        std::string value;
        const size_t eq = flag.find('=');
        const bool has_value = flag.rfind("--", 0) == 0 && eq != std::string::npos;
        if (has_value) {
            value = flag.substr(eq + 1);
            flag.resize(eq);
        }
        if (flag == "--help" || flag == "-h") {
            printUsage(stdout);
            std::exit(kExitPass);
        }
        auto known = std::begin(flags);
        while (known != std::end(flags) && flag != known->name) ++known;
        if (known == std::end(flags)) usageError("unknown argument '%s'", argv[a]);
        if (has_value && !known->takes_value) usageError("%s takes no value", flag.c_str());
        if (!has_value && known->takes_value) {
            if (a + 1 >= argc) usageError("%s needs a value", flag.c_str());
            value = argv[++a];
        }
        known->set(value);
    }
}

// One line and status 3 for every way of having no usable GPU.
[[noreturn]] [[maybe_unused]] static void noGpu(const char* why, cudaError_t err) {
    std::fprintf(stderr, "%s: no usable GPU: %s (%s)\n", kProgram, why, cudaGetErrorName(err));
    std::exit(kExitNoGpu);
}

[[maybe_unused]] static std::string fmt(const char* format, double value) {
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

[[maybe_unused]] static std::string num(unsigned long long value) { return std::to_string(value); }

// A float as the tables and mismatch lines print it: a whole number without a point.
[[maybe_unused]] static std::string showValue(float v) {
    char text[48];
    if (v != v) return "nan";
    if (v > -1e15f && v < 1e15f && v == float(int64_t(v))) {
        std::snprintf(text, sizeof text, "%" PRId64, int64_t(v));
    } else {
        std::snprintf(text, sizeof text, "%g", double(v));
    }
    return text;
}

// Header, dashes, rows, blank line; columns two spaces apart and never empty, so
// the harness reads them by header (scanlab.run.parse_table).
[[maybe_unused]] static void printTable(const std::vector<std::string>& header,
                                        const std::vector<std::vector<std::string>>& rows) {
    std::vector<size_t> width(header.size());
    for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
    for (const auto& row : rows) {
        for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], std::max<size_t>(1, row[c].size()));
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string text;
        for (size_t c = 0; c < cells.size(); ++c) {
            const std::string cell = cells[c].empty() ? "-" : cells[c];
            text += cell;
            if (c + 1 < cells.size()) text += std::string(width[c] - cell.size() + 2, ' ');
        }
        std::printf("%s\n", text.c_str());
    };
    line(header);
    std::vector<std::string> dashes;
    for (size_t w : width) dashes.push_back(std::string(w, '-'));
    line(dashes);
    for (const auto& row : rows) line(row);
    std::printf("\n");
}

[[maybe_unused]] static float median(std::vector<float> values) {
    std::sort(values.begin(), values.end());
    const size_t mid = values.size() / 2;
    return values.size() % 2 ? values[mid] : 0.5f * (values[mid - 1] + values[mid]);
}

[[maybe_unused]] static double gbPerSecond(double bytes, double ms) { return bytes / (ms * 1e6); }

// The device every program uses, or status 3 with one line for every way of having no
// usable GPU: no device, a driver too old for this runtime, or (asking for the
// attributes of `probe`, one of the program's kernels, which fails before any launch
// would) no machine code or PTX in this binary that the GPU can run.
[[maybe_unused]] static cudaDeviceProp openDevice(const void* probe) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) noGpu("no CUDA device found", cudaErrorNoDevice);
    if (err == cudaErrorInsufficientDriver) noGpu("the CUDA driver is missing or older than this program's runtime", err);
    if (err != cudaSuccess) noGpu("the CUDA runtime could not start", err);

    CUDA_CHECK(cudaSetDevice(0));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));

    cudaFuncAttributes attr{};
    const cudaError_t image = cudaFuncGetAttributes(&attr, probe);
    if (image != cudaSuccess) {
        char why[160];
        std::snprintf(why, sizeof why, "this binary has no code for sm_%d%d; rebuild with -arch=sm_%d%d", prop.major,
                      prop.minor, prop.major, prop.minor);
        noGpu(why, image);
    }
    return prop;
}

// Device memory for `count` elements of T (cudaMalloc aligns far past the 16 bytes of a vector load).
template <typename T>
static T* deviceArray(size_t count) {
    T* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
    return p;
}

// Exact comparison of the first expected.size() elements (`actual` may be longer).
// A NaN in `actual` (an element never written: see the poisoned outputs) counts as
// a mismatch, since NaN equals nothing.
[[maybe_unused]] static Mismatch compareExact(const std::vector<float>& expected, const std::vector<float>& actual) {
    Mismatch m;
    for (size_t i = 0; i < expected.size(); ++i) {
        if (actual[i] != expected[i]) {
            if (m.count == 0) {
                m.first = i;
                m.expected = expected[i];
                m.actual = actual[i];
            }
            ++m.count;
        }
    }
    return m;
}

// Device events around each of `reps` repetitions, after `warmups` untimed runs; the
// median is returned, in milliseconds, once the device is idle (so a fault in the timed
// work fails here). Nothing in `enqueue` may allocate or synchronise.
template <typename Enqueue>
static float medianMs(int warmups, int reps, Enqueue&& enqueue) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int w = 0; w < warmups; ++w) enqueue();
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(size_t(reps), 0.0f);
    for (int r = 0; r < reps; ++r) {
        CUDA_CHECK(cudaEventRecord(start));
        enqueue();
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&ms[size_t(r)], start, stop));
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaDeviceSynchronize());
    return median(ms);
}

// ==== end of plumbing ================================================================
