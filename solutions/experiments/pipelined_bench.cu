// The bench of the pipelined scan (../pipelined_scan.cu): checks, stress and timing.
//
// Checks the persistent, pipelined single-pass scan exactly against a CPU reference at every
// size that matters (float32 and int32, exclusive and inclusive), with the outputs poisoned
// first, and checks that every launch scanned every tile exactly once (a per-tile visit count)
// and that each producer drew exactly one ticket past the end (the counter is left at tiles +
// grid). --stress runs small-tile builds of the same kernel, thousands of tiles per block,
// once and 8 times back to back. --bench times n = 2^20 .. 2^28 against a device-to-device
// copy (the better of cudaMemcpyAsync and an SM copy kernel, measured in the same run),
// drill 05's classic look-back and cub::DeviceScan, and says which kernel the dispatcher picks.
//
// Build (from solutions/; sm_90 only: cp.async.bulk and mbarrier expect_tx):
//   nvcc -std=c++17 -O3 -arch=sm_90 -lineinfo -Xcompiler -Wall,-Wextra -o pipelined_bench experiments/pipelined_bench.cu
//   ... -DPIPE_STAGES=4 -DPIPE_TILE_KIB=48 -DPIPE_BULK_STORE=1   a tuning build (knobs: ../pipelined_scan.cu)
//   ... -DPIPE_NO_CUB                                              no CUB rows (builds in a third of the time)
// Run:
//   ./pipelined_bench                   every check, then time n = 2^24 and 2^28
//   ./pipelined_bench --full            ... and check n = 2^28 as well
//   ./pipelined_bench --stress          the small-tile builds: many tiles a block, repeated launches
//   ./pipelined_bench --bench           check and time n = 2^20 .. 2^28 (--bench-min K / --bench-max M: 2^K .. 2^M)
//   ./pipelined_bench --time-log2 28    time one size (the tuning builds); prints "tuning:" lines
//                                       (--float-only: float32 only)
//   ./pipelined_bench --quick           small sizes only, no timing (for compute-sanitizer)
//   ./pipelined_bench --check-only      every check, no timing
//   ./pipelined_bench --csv FILE        also write the timed rows (the library benchmark reads them)
//   ./pipelined_bench --ablation        one build per design step at 2^28 float32, as a table and as
//                                       Markdown (a build with -DPIPE_ABLATION -DPIPE_NO_CUB only)
//   ./pipelined_bench --seed 7 / --reps R / --timeout S / --help
// Observe: the check table (first bad index, should, is; "visits" is the exactly-once check);
// the timing table ("of copy" against the copy of the same run, "vs CUB" = CUB's time / ours);
// the targets (informational): 0.90 of copy and 1.21x CUB at 2^28, and from 2^20 up the
// dispatcher never slower than CUB; and the crossover the sweep suggests for PIPE_CROSSOVER_LOG2.
// Exactness: as drill 05's bench: float inputs are small integers whose total is at most 2^24
// (sparse ones past 2^24 elements), int32 inputs 0..3; every comparison is exact (!=).
// Exit status: 0 every gated check passed; 1 a check failed, a CUDA call failed or a launch
// hung (the watchdog); 2 bad command line; 3 no usable GPU (no device, driver, or sm_90 code).

#include <cuda_runtime.h>

#ifndef PIPE_NO_CUB
#include <cub/cub.cuh>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;
constexpr const char* kProgram = "pipelined_bench";  // error lines start with it

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

#include "../pipelined_scan.cu"

#ifdef PIPE_NO_CUB
constexpr bool kHaveCub = false;
#else
constexpr bool kHaveCub = true;
#endif

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
[[maybe_unused]] static uint64_t clockSeed();
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

constexpr size_t kBig = size_t(1) << 28;
constexpr int kWarmups = 2;
constexpr int kStressRepeats = 8;
// The stress builds: the same kernel with tiny tiles, so 2^28 elements are half a million tiles
// (thousands a block); the second has 2 stages, the tightest ring (the deferred release too).
using StressPipe = PipeShape<2048, 4, 4, PIPE_BULK_STORE != 0>;  // 512-element tiles
using TinyPipe = PipeShape<1024, 2, 2, PIPE_BULK_STORE != 0>;    // 256-element tiles, 2 stages

// ==== drill 05's input and check, identical in exercises/bench/05_lookback_scan_bench.cu and solutions/experiments/pipelined_bench.cu ====
//
// The library benchmark (solutions/bench_libraries.py) sets the two programs' rows side by side:
// they must scan the same inputs and judge them alike, so this block is one text in both files
// (harness/test_pipelined.py fails when the copies differ).

// ---- input -------------------------------------------------------------------
//
// The generator is splitmix64, in the plumbing block at the end of the file: the same
// seed gives the same data with every compiler, so a failing seed reproduces anywhere.

// Each (n, type) gets its own stream of numbers, all derived from the one printed seed.
static uint64_t streamSeed(uint64_t seed, size_t n, bool is_float) {
    uint64_t state = seed ^ (uint64_t(n) * 0xD1B54A32D192ED03ull) ^ (is_float ? 0x5851F42D4C957F2Dull : 0);
    return splitmix64(state);
}

template <typename T>
static const char* typeName() {
    return std::is_same<T, float>::value ? "float32" : "int32";
}

// float: random integers 0..top with top = min(3, 2^24 / n), so the whole array sums
// to at most 2^24; when even top = 1 is too much (n > 2^24), exactly one 1 in every
// run of k = ceil(n / 2^24) elements at a random offset, zeros elsewhere: at most
// 2^24 ones in all. int32: random 0..3 at every size (3 * 2^28 < 2^31).
constexpr uint64_t kExactLimit = uint64_t(1) << 24;  // floats hold every integer up to here
static uint64_t floatTop(size_t n) { return std::min<uint64_t>(3, n == 0 ? 3 : kExactLimit / n); }
static size_t sparseRun(size_t n) { return size_t((n + kExactLimit - 1) / kExactLimit); }

template <typename T>
static void makeInput(size_t n, uint64_t seed, std::vector<T>& values) {
    values.assign(n, T(0));
    uint64_t state = streamSeed(seed, n, std::is_same<T, float>::value);
    const uint64_t top = std::is_same<T, float>::value ? floatTop(n) : 3;
    if (top >= 1) {
        for (size_t i = 0; i < n; ++i) values[i] = T(splitmix64(state) % (top + 1));
        return;
    }
    const size_t k = sparseRun(n);
    for (size_t run = 0; run * k < n; ++run) {
        const size_t at = run * k + size_t(splitmix64(state) % k);
        if (at < n) values[at] = T(1);
    }
}

// ---- CPU reference -----------------------------------------------------------
//
// The obvious running sum, in 64-bit integers (every input is a small non-negative
// integer), compared element by element as it goes, so 2^28 elements need no second
// array. Alongside it runs the scan of every tile on its own, the answer a kernel
// gives when no tile gets a carry from its predecessors: the starter's answer.

struct Check {
    size_t n = 0;
    size_t tile = 1;
    size_t mismatches = 0;
    size_t first = 0;
    double expected = 0.0;
    double actual = 0.0;
    bool never_written = false;   // the first wrong element still holds the poison
    bool tile_local = true;       // the output is every tile scanned on its own
    bool carry_constant = false;  // the first wrong tile is off by one constant throughout
    double carry_error = 0.0;     // ... and by how much

    size_t tiles() const { return (n + tile - 1) / tile; }
};

template <typename T>
static bool isPoison(T v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits == 0xFFFFFFFFu;  // cudaMemset(0xFF): a NaN as float32, -1 as int32 (all answers are >= 0)
}

template <typename T>
static Check checkScan(const std::vector<T>& in, const std::vector<T>& out, bool inclusive, size_t tile) {
    Check c;
    c.n = in.size();
    c.tile = tile;
    int64_t global = 0, local = 0, bad_tile_start = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        if (i % tile == 0) local = 0;
        const int64_t x = int64_t(in[i]);
        const T expected = T(inclusive ? global + x : global);
        const T tile_expected = T(inclusive ? local + x : local);
        if (out[i] != tile_expected) c.tile_local = false;
        if (out[i] != expected) {  // a NaN never compares equal, so an unwritten float counts
            if (c.mismatches == 0) {
                c.first = i;
                c.expected = double(expected);
                c.actual = double(out[i]);
                c.never_written = isPoison(out[i]);
                bad_tile_start = global - local;  // everything before this tile
            }
            ++c.mismatches;
        }
        global += x;
        local += x;
    }
    if (c.mismatches > 0) {  // is the first wrong tile off by one constant (a wrong carry)?
        const size_t start = c.first / tile * tile, end = std::min(in.size(), start + tile);
        int64_t running = bad_tile_start;
        c.carry_constant = true;
        for (size_t i = start; i < end && c.carry_constant; ++i) {
            const int64_t x = int64_t(in[i]);
            const double expected = double(T(inclusive ? running + x : running));
            const double error = double(out[i]) - expected;
            if (i == start) c.carry_error = error;
            if (error != c.carry_error || error != error) c.carry_constant = false;
            running += x;
        }
        if (c.first != start) c.carry_constant = false;  // right at first, then wrong: not a carry
    }
    return c;
}

static std::string showNumber(double v) {
    char text[48];
    if (v != v) return "nan";
    if (v > -1e15 && v < 1e15 && v == double(int64_t(v))) {
        std::snprintf(text, sizeof text, "%" PRId64, int64_t(v));
    } else {
        std::snprintf(text, sizeof text, "%g", v);
    }
    return text;
}

// ---- GPU kernels: the bench's own -----------------------------------------------

// Reads `count` 16-byte words and writes nothing (the store is never taken): run
// between timed repetitions over twice the L2's size, it leaves the L2 holding this
// buffer's clean lines, so the next repetition starts cold and pays no write-back of
// the previous one's output.
__global__ void flush_l2(const int4* __restrict__ buffer, size_t count, int* __restrict__ sink) {
    int acc = 0;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
        const int4 q = buffer[i];
        acc ^= q.x ^ q.y ^ q.z ^ q.w;
    }
    if (acc == 0x7fffffff) *sink = acc;  // the buffer is zeros: never taken
}

// ==== end of drill 05's input and check ====

// The SM copy of experiments/ceiling.cu (persistent, kUnroll 16-byte loads a thread before
// the stores); timed at two settings, the better one (or cudaMemcpyAsync) is "copy".
template <int kUnroll>
__global__ void __launch_bounds__(256) sm_copy(const int4* __restrict__ in, int4* __restrict__ out, size_t count) {
    const size_t step = size_t(gridDim.x) * 256 * kUnroll;
    size_t i = size_t(blockIdx.x) * 256 * kUnroll + threadIdx.x;
    for (; i + size_t(kUnroll - 1) * 256 < count; i += step) {
        int4 r[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) r[u] = in[i + size_t(u) * 256];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) out[i + size_t(u) * 256] = r[u];
    }
    for (int u = 0; u < kUnroll; ++u)
        if (i + size_t(u) * 256 < count) out[i + size_t(u) * 256] = in[i + size_t(u) * 256];
}

// ---- host side: options -------------------------------------------------------------
struct Options {
    bool quick = false, check_only = false, full = false, bench = false, stress = false, float_only = false;
    bool ablation = false;
    uint64_t seed = 0;
    bool seed_given = false;
    int reps = 20;
    int time_log2 = 0;
    int bench_min = 20, bench_max = 28;
    std::string csv;
    int timeout_s = 20;
    bool timed() const { return !check_only && !quick; }
};

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: pipelined_bench [--full] [--bench] [--stress] [--quick] [--check-only] [--bench-min K] [--bench-max M] [--ablation]\n"
                 "                       [--time-log2 K] [--float-only] [--csv FILE] [--seed S] [--reps R] [--timeout S] [--help]\n"
                 "  --full         also check n = 2^28\n"
                 "  --bench        time n = 2^K .. 2^M (--bench-min K, default 20; --bench-max M, default 28), both types and scans\n"
                 "  --stress       %d- and %d-element-tile builds over 2^24 + 7 and 2^28 elements, once and %d back to back\n"
                 "  --quick        small sizes only (at most 2^18 + 3), no timing: for compute-sanitizer\n"
                 "  --check-only   every check, no timing\n"
                 "  --time-log2 K  time n = 2^K only (10..28); prints one \"tuning:\" line per type and scan\n"
                 "  --float-only   time float32 only (the tuning builds: half the time)\n"
                 "  --csv FILE     write the timed rows: n,type,scan,implementation,ms,gb_per_s,copy_gb_per_s\n"
                 "                 (implementation: copy, pipelined, look-back, CUB, dispatch)\n"
                 "  --ablation     one build per design step at n = 2^28 float32, checked, timed, and printed as\n"
                 "                 a table and as Markdown (builds with -DPIPE_ABLATION only)\n"
                 "  --seed S       the inputs' seed (default: from the clock, printed)\n"
                 "  --reps R       timed repetitions, median reported (default 20)\n"
                 "  --timeout S    a launch not finished after S seconds is a hang: exit 1 (default 20; 0: wait)\n"
                 "exit status: 0 every gated check passed, 1 a check failed / CUDA error / hang, 2 usage, 3 no usable GPU\n",
                 StressPipe::kTile, TinyPipe::kTile, kStressRepeats);
}

static Options parseOptions(int argc, char** argv) {
    Options opt;
    auto number = [](const std::string& v, unsigned long long lo, unsigned long long hi) {
        return numberFlag(v, lo, hi, false, "bad value '%s'");
    };
    const Flag flags[] = {
        {"--full", false, [&](const std::string&) { opt.full = true; }},
        {"--bench", false, [&](const std::string&) { opt.bench = true; }},
        {"--stress", false, [&](const std::string&) { opt.stress = true; }},
        {"--quick", false, [&](const std::string&) { opt.quick = true; }},
        {"--check-only", false, [&](const std::string&) { opt.check_only = true; }},
        {"--ablation", false, [&](const std::string&) {
#ifndef PIPE_ABLATION
             usageError("%s needs a build with -DPIPE_ABLATION (run_pipelined_device.sh makes one)", "--ablation");
#endif
             opt.ablation = true;
         }},
        {"--float-only", false, [&](const std::string&) { opt.float_only = true; }},
        {"--seed", true, [&](const std::string& v) { opt.seed = number(v, 0, UINT64_MAX), opt.seed_given = true; }},
        {"--reps", true, [&](const std::string& v) { opt.reps = int(number(v, 1, 1000)); }},
        {"--time-log2", true, [&](const std::string& v) { opt.time_log2 = int(number(v, 10, 28)); }},
        {"--bench-min", true, [&](const std::string& v) { opt.bench_min = int(number(v, 10, 28)); }},
        {"--bench-max", true, [&](const std::string& v) { opt.bench_max = int(number(v, 10, 28)); }},
        {"--timeout", true, [&](const std::string& v) { opt.timeout_s = int(number(v, 0, 86400)); }},
        {"--csv", true, [&](const std::string& v) { opt.csv = v; }},
    };
    parseFlags(argc, argv, flags);
    if (opt.quick && (opt.full || opt.bench || opt.stress)) usageError("%s does not combine with --full, --bench or --stress", "--quick");
    if (opt.check_only && (opt.bench || opt.time_log2)) usageError("%s times nothing", "--check-only");
    if (opt.bench_min > opt.bench_max) usageError("%s: want --bench-min <= --bench-max", "--bench");
    if (opt.ablation && (opt.quick || opt.check_only || opt.bench || opt.stress || opt.full || opt.time_log2))
        usageError("%s runs alone (with --reps, --seed, --timeout)", "--ablation");
    return opt;
}

// ---- host side: the watchdog ----------------------------------------------------------
static int g_timeout_s = 20;
static void waitForStream(const char* what) {
    cudaEvent_t done;
    CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(done));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(g_timeout_s);
    while (true) {
        const cudaError_t err = g_timeout_s == 0 ? cudaEventSynchronize(done) : cudaEventQuery(done);
        if (err == cudaSuccess) break;
        if (err != cudaErrorNotReady) CUDA_CHECK(err);
        if (std::chrono::steady_clock::now() > deadline) {
            std::printf("\nHUNG: %s did not finish within %d s (--timeout)\n", what, g_timeout_s);
            std::fflush(stdout);
            std::_Exit(kExitFail);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    CUDA_CHECK(cudaEventDestroy(done));
}

// ---- host side: buffers and launches ---------------------------------------------------
struct Buffers {
    void* in = nullptr;
    void* out = nullptr;
    unsigned* visits = nullptr;  // one word per tile of the smallest-tile build
    size_t visit_capacity = 0;
    void* cub_temp = nullptr;
    size_t cub_temp_bytes = 0;
    int4* flush = nullptr;
    size_t flush_words = 0;
    int* sink = nullptr;
    int sms = 1;
};

enum class Path { Pipelined, Stress, Tiny, Classic, Dispatch, Cub };
static const char* pathName(Path p) {
    switch (p) {
        case Path::Pipelined: return "pipelined";
        case Path::Stress: return "pipelined-512";
        case Path::Tiny: return "pipelined-256x2st";
        case Path::Classic: return "look-back";
        case Path::Dispatch: return "dispatch";
        case Path::Cub: return "CUB";
    }
    return "?";
}
static size_t tileOf(Path p) {
    switch (p) {
        case Path::Pipelined: return TunedPipe::kTile;
        case Path::Stress: return StressPipe::kTile;
        case Path::Tiny: return TinyPipe::kTile;
        default: return TunedShape::kTile;
    }
}

template <typename T>
static void cubScan(bool inclusive, Buffers& buf, const T* in, T* out, size_t n) {
#ifndef PIPE_NO_CUB
    size_t bytes = buf.cub_temp_bytes;
    if (inclusive) {
        CUDA_CHECK(cub::DeviceScan::InclusiveSum(buf.cub_temp, bytes, in, out, int64_t(n)));
    } else {
        CUDA_CHECK(cub::DeviceScan::ExclusiveSum(buf.cub_temp, bytes, in, out, int64_t(n)));
    }
#else
    (void)inclusive, (void)buf, (void)in, (void)out, (void)n;
#endif
}
template <typename T>
static size_t cubTempBytes(size_t n) {
    size_t bytes = 0;
#ifndef PIPE_NO_CUB
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const T*>(nullptr), static_cast<T*>(nullptr), int64_t(n)));
    size_t incl = 0;
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, incl, static_cast<const T*>(nullptr), static_cast<T*>(nullptr), int64_t(n)));
    bytes = std::max(bytes, incl);
#else
    (void)n;
#endif
    return bytes;
}

// Enqueue one scan by `path`; returns the pipelined grid (0 for the others).
template <typename T>
static unsigned enqueue(Path path, bool inclusive, const T* in, T* out, size_t n, ScanState& st, Buffers& buf,
                        unsigned* visits) {
    switch (path) {
        case Path::Pipelined: return pipelined_launch<TunedPipe>(inclusive, in, out, n, st, 0, visits);
        case Path::Stress: return pipelined_launch<StressPipe>(inclusive, in, out, n, st, 0, visits);
        case Path::Tiny: return pipelined_launch<TinyPipe>(inclusive, in, out, n, st, 0, visits);
        case Path::Classic: classic_launch(inclusive, in, out, n, st, 0); return 0;
        case Path::Dispatch: scan_dispatch(inclusive, in, out, n, st, 0); return 0;
        case Path::Cub: cubScan(inclusive, buf, in, out, n); return 0;
    }
    return 0;
}

static void prepareKernels() {
    CUDA_CHECK((pipelined_prepare<TunedPipe, float>()));
    CUDA_CHECK((pipelined_prepare<TunedPipe, int>()));
    CUDA_CHECK((pipelined_prepare<StressPipe, float>()));
    CUDA_CHECK((pipelined_prepare<StressPipe, int>()));
    CUDA_CHECK((pipelined_prepare<TinyPipe, float>()));
    CUDA_CHECK((pipelined_prepare<TinyPipe, int>()));
}

// ---- host side: checking ----------------------------------------------------------------
struct Gate {
    int checks = 0;
    std::vector<std::string> failures;
    bool record(const std::string& what, bool ok, const std::string& why) {
        ++checks;
        if (!ok) failures.push_back(what + ": " + why);
        return ok;
    }
};

template <typename T>
static void upload(const std::vector<T>& input, Buffers& buf) {
    if (!input.empty()) CUDA_CHECK(cudaMemcpy(buf.in, input.data(), input.size() * sizeof(T), cudaMemcpyHostToDevice));
}

// After `launches` pipelined launches of one n since the visits were zeroed: every tile was
// scanned `launches` times, and the last launch's counter holds tiles + grid.
struct VisitCheck {
    bool ok = true;
    std::string why = "exact";
};
static VisitCheck checkVisits(Buffers& buf, ScanState& st, size_t tiles, unsigned grid, unsigned launches) {
    VisitCheck v;
    std::vector<unsigned> h(tiles);
    CUDA_CHECK(cudaMemcpy(h.data(), buf.visits, tiles * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (size_t t = 0; t < tiles; ++t) {
        if (h[t] != launches) {
            v.ok = false;
            v.why = "tile " + num(t) + " scanned " + num(h[t]) + " times, should be " + num(launches);
            return v;
        }
    }
    unsigned counter = 0;
    CUDA_CHECK(cudaMemcpy(&counter, st.pipe_counters + ((st.pipe_launches - 1) & 1u), sizeof counter, cudaMemcpyDeviceToHost));
    if (counter != tiles + grid) {
        v.ok = false;
        v.why = "the counter ended at " + num(counter) + ", should be tiles + grid = " + num(tiles + grid);
    }
    return v;
}

static bool isPipelined(Path p) { return p == Path::Pipelined || p == Path::Stress || p == Path::Tiny; }

// One checked run (poisoned output, watchdog, exact comparison, and for the pipelined paths
// the exactly-once check); adds a row and a gate record.
template <typename T>
static bool runChecked(Path path, bool inclusive, const std::vector<T>& input, Buffers& buf, ScanState& st, Gate& gate,
                       std::vector<std::vector<std::string>>& rows, const std::string& why_size, int repeats = 1) {
    const size_t n = input.size();
    const size_t tiles = (n + tileOf(path) - 1) / tileOf(path);
    const bool counted = isPipelined(path) && n > 0;
    if (counted) CUDA_CHECK(cudaMemset(buf.visits, 0, tiles * sizeof(unsigned)));
    if (n > 0) CUDA_CHECK(cudaMemset(buf.out, 0xFF, n * sizeof(T)));
    unsigned grid = 0;
    for (int r = 0; r < repeats; ++r)
        grid = enqueue(path, inclusive, static_cast<const T*>(buf.in), static_cast<T*>(buf.out), n, st, buf,
                       counted ? buf.visits : nullptr);
    CUDA_CHECK_LAUNCH();
    const std::string what = std::string(pathName(path)) + " " + typeName<T>() + " " + (inclusive ? "inclusive" : "exclusive") +
                             " n=" + num(n) + (repeats > 1 ? " x" + num(unsigned(repeats)) : "");
    waitForStream(what.c_str());
    std::vector<T> out(n);
    if (n > 0) CUDA_CHECK(cudaMemcpy(out.data(), buf.out, n * sizeof(T), cudaMemcpyDeviceToHost));
    const Check c = checkScan(input, out, inclusive, tileOf(path));
    VisitCheck v;
    if (counted) v = checkVisits(buf, st, tiles, grid, unsigned(repeats));
    const bool ok = c.mismatches == 0 && v.ok;
    std::string why = c.mismatches == 0 ? "exact" : "out[" + num(c.first) + "] is " + showNumber(c.actual) + ", should be " +
                                                        showNumber(c.expected) + " (" + num(c.mismatches) + " wrong" +
                                                        (c.never_written ? ", never written" : "") + ", tile " +
                                                        num(c.first / c.tile) + ")";
    gate.record(what, ok, why + (v.ok ? "" : "; " + v.why));
    rows.push_back({num(n), pathName(path), typeName<T>(), inclusive ? "inclusive" : "exclusive", num(tiles),
                    counted ? num(grid) : "-", num(unsigned(repeats)), num(c.mismatches),
                    c.mismatches ? num(c.first) : "-", c.mismatches ? showNumber(c.expected) : "-",
                    c.mismatches ? showNumber(c.actual) : "-", counted ? v.why : "-", ok ? "pass" : "FAIL", why_size});
    return ok;
}

static const std::vector<std::string> kCheckHeader = {"n", "kernel", "type", "scan", "tiles", "grid", "launches",
                                                      "mismatches", "first bad", "should be", "is", "visits", "gated", "why"};

struct SizeCase {
    size_t n;
    Path path;
    std::string why;
};

static std::vector<SizeCase> checkSizes(const Options& opt, uint64_t seed, int sms) {
    const size_t t = TunedPipe::kTile;
    std::vector<SizeCase> sizes = {
        {0, Path::Pipelined, "empty: no launch"},
        {1, Path::Pipelined, "one element: no bulk copy at all, the ragged end only"},
        {3, Path::Pipelined, "three: still below one 16-byte bulk unit"},
        {t - 1, Path::Pipelined, "tile - 1: one partial tile, bulk copy + ragged end"},
        {t, Path::Pipelined, "one full tile, one block"},
        {t + 1, Path::Pipelined, "tile + 1: the first carry, into a 1-element tile"},
        {t * size_t(sms / 2) + 5, Path::Pipelined, "fewer tiles than SMs: a grid of one block a tile"},
        {t * size_t(3 * sms) + 4, Path::Pipelined, "3 tiles a block, n % 4 == 0 with a partial last tile"},
        {(size_t(1) << 18) + 3, Path::Pipelined, "2^18 + 3: n not a multiple of 4"},
        {(size_t(1) << 18) + 3, Path::Dispatch, "the dispatcher below its crossover: the classic kernel"},
        {(size_t(1) << 18) + 3, Path::Stress, "512-element tiles: 2 to 4 tiles a block in flight"},
        {(size_t(1) << 16) + 1, Path::Tiny, "256-element tiles, 2 stages: the tightest ring"},
    };
    uint64_t state = seed ^ 0xA5A5A5A5A5A5A5A5ull;
    const int randoms = opt.quick ? 1 : 3;
    const uint64_t random_max = opt.quick ? (uint64_t(1) << 16) : (uint64_t(1) << 22);
    for (int r = 0; r < randoms; ++r) sizes.push_back({size_t(2 + splitmix64(state) % (random_max - 1)), Path::Pipelined,
                                                       "random size (seed " + num(seed) + ")"});
    if (!opt.quick) {
        sizes.push_back({(size_t(1) << 24) + 1, Path::Pipelined, "2^24 + 1: about 16 tiles a block"});
        sizes.push_back({(size_t(1) << 24) + 1, Path::Dispatch, "2^24 + 1 through the dispatcher"});
    }
    if (opt.full) sizes.push_back({kBig, Path::Pipelined, "2^28: the benchmark's largest size"});
    return sizes;
}

template <typename T>
static void checkType(const std::vector<SizeCase>& sizes, uint64_t seed, Buffers& buf, ScanState& st, Gate& gate,
                      std::vector<std::vector<std::string>>& rows) {
    std::vector<T> input;
    for (const SizeCase& sc : sizes) {
        makeInput(sc.n, seed, input);
        upload(input, buf);
        for (bool inclusive : {false, true}) runChecked(sc.path, inclusive, input, buf, st, gate, rows, sc.why);
    }
}

static void runStress(uint64_t seed, Buffers& buf, ScanState& st, Gate& gate) {
    std::printf("Stress: small-tile builds of the kernel, thousands of tiles a block, each case once and %d times back\n"
                "to back (the counters alternate, the descriptors' epochs advance, nothing is cleared between)\n",
                kStressRepeats);
    std::vector<std::vector<std::string>> rows;
    for (size_t n : {(size_t(1) << 24) + 7, kBig}) {
        std::vector<float> f;
        makeInput(n, seed, f);
        upload(f, buf);
        for (Path p : {Path::Stress, Path::Tiny, Path::Pipelined})
            for (bool inclusive : {false, true})
                for (int repeats : {1, kStressRepeats}) runChecked(p, inclusive, f, buf, st, gate, rows, "stress", repeats);
        f.clear();
        f.shrink_to_fit();
        std::vector<int> i;
        makeInput(n, seed, i);
        upload(i, buf);
        for (Path p : {Path::Stress, Path::Tiny})
            for (bool inclusive : {false, true}) runChecked(p, inclusive, i, buf, st, gate, rows, "stress", kStressRepeats);
    }
    printTable(kCheckHeader, rows);
}

// ---- host side: timing --------------------------------------------------------------------
template <typename Enqueue>
static float coldMedianMs(const Buffers& buf, int reps, const char* what, Enqueue&& op) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int w = 0; w < kWarmups; ++w) op();
    CUDA_CHECK_LAUNCH();
    waitForStream(what);
    std::vector<float> ms(size_t(reps), 0.0f);
    for (int r = 0; r < reps; ++r) {
        flush_l2<<<unsigned(4 * buf.sms), 512>>>(buf.flush, buf.flush_words, buf.sink);
        CUDA_CHECK(cudaEventRecord(start));
        op();
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK_LAUNCH();
        waitForStream(what);
        CUDA_CHECK(cudaEventElapsedTime(&ms[size_t(r)], start, stop));
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return median(ms);
}

struct Timed {
    size_t n;
    std::string type, scan;
    double pipe_of_copy, classic_of_copy, cub_of_copy, pipe_ms, classic_ms, cub_ms, dispatch_ms;
};

template <typename T>
static void timeType(size_t n, uint64_t seed, const Options& opt, double copy_ms, Buffers& buf, ScanState& st,
                     Gate& gate, std::vector<std::vector<std::string>>& check_rows,
                     std::vector<std::vector<std::string>>& rows, std::vector<Timed>& timed, FILE* csv) {
    std::vector<T> input;
    makeInput(n, seed, input);
    upload(input, buf);
    const T* d_in = static_cast<const T*>(buf.in);
    T* d_out = static_cast<T*>(buf.out);
    const double bytes = 2.0 * double(n) * sizeof(T), copy_gbs = gbPerSecond(bytes, copy_ms);
    for (bool inclusive : {false, true}) {
        const char* scan = inclusive ? "inclusive" : "exclusive";
        bool ok = runChecked(Path::Pipelined, inclusive, input, buf, st, gate, check_rows, "timed size");
        if (opt.time_log2 == 0) {
            ok = runChecked(Path::Classic, inclusive, input, buf, st, gate, check_rows, "timed size") && ok;
            if (kHaveCub) ok = runChecked(Path::Cub, inclusive, input, buf, st, gate, check_rows, "timed size") && ok;
        }
        const std::string what = std::string("timed ") + typeName<T>() + " " + scan + " n=" + num(n);
        const float pipe_ms = coldMedianMs(buf, opt.reps, what.c_str(), [&] {
            pipelined_launch<TunedPipe>(inclusive, d_in, d_out, n, st, 0);
        });
        float classic_ms = 0, cub_ms = 0;
        if (opt.time_log2 == 0) {
            classic_ms = coldMedianMs(buf, opt.reps, "classic", [&] { classic_launch(inclusive, d_in, d_out, n, st, 0); });
            if (kHaveCub) cub_ms = coldMedianMs(buf, opt.reps, "CUB", [&] { cubScan(inclusive, buf, d_in, d_out, n); });
        }
        const bool pipelined_chosen = uses_pipelined(d_in, d_out, n);
        const float dispatch_ms = pipelined_chosen ? pipe_ms : classic_ms;
        const double gbs = gbPerSecond(bytes, pipe_ms);
        auto of_copy = [&](float ms) { return ms > 0 ? gbPerSecond(bytes, ms) / copy_gbs : 0.0; };
        auto cell = [](double v, const char* f) { return v > 0 ? fmt(f, v) : std::string("-"); };
        rows.push_back({"2^" + num(unsigned(std::log2(double(n)))), typeName<T>(), scan, ok ? "pass" : "FAIL",
                        fmt("%.1f", copy_gbs), fmt("%.4f", pipe_ms), fmt("%.1f", gbs), fmt("%.3f", of_copy(pipe_ms)),
                        cell(of_copy(classic_ms), "%.3f"), cell(cub_ms, "%.4f"), cell(of_copy(cub_ms), "%.3f"),
                        cell(cub_ms > 0 ? cub_ms / pipe_ms : 0, "%.2fx"), pipelined_chosen ? "pipelined" : "look-back",
                        cell(cub_ms > 0 && dispatch_ms > 0 ? cub_ms / dispatch_ms : 0, "%.2fx")});
        timed.push_back({n, typeName<T>(), scan, of_copy(pipe_ms), of_copy(classic_ms), of_copy(cub_ms), pipe_ms,
                         classic_ms, cub_ms, dispatch_ms});
        if (opt.time_log2 != 0) {
            std::printf("tuning: stages %d tile %d KiB scan-warps %d bulk-store %d spin %d | n=2^%d %s %s %.4f ms %.1f GB/s "
                        "%.3f of copy\n",
                        PIPE_STAGES, PIPE_TILE_KIB, PIPE_SCAN_WARPS, PIPE_BULK_STORE, PIPE_SPIN_NS, opt.time_log2,
                        typeName<T>(), scan, pipe_ms, gbs, of_copy(pipe_ms));
        }
        if (csv != nullptr) {
            for (auto [impl, ms] : {std::pair<const char*, float>{"pipelined", pipe_ms}, {"look-back", classic_ms}, {"CUB", cub_ms},
                                    {"dispatch", opt.time_log2 == 0 ? dispatch_ms : 0.0f}})
                if (ms > 0) std::fprintf(csv, "%zu,%s,%s,%s,%.5f,%.1f,%.1f\n", n, typeName<T>(), scan, impl, ms,
                                         gbPerSecond(bytes, ms), copy_gbs);
        }
    }
}

static void runTiming(const Options& opt, uint64_t seed, Buffers& buf, ScanState& st, Gate& gate) {
    std::vector<size_t> sizes;
    if (opt.time_log2 != 0) {
        sizes.push_back(size_t(1) << opt.time_log2);
    } else if (opt.bench) {
        for (int p = opt.bench_min; p <= opt.bench_max; ++p) sizes.push_back(size_t(1) << p);
    } else {
        sizes = {size_t(1) << 24, kBig};
    }
    FILE* csv = opt.csv.empty() ? nullptr : std::fopen(opt.csv.c_str(), "w");
    if (!opt.csv.empty() && csv == nullptr) {
        std::fprintf(stderr, "%s: cannot write %s: %s\n", kProgram, opt.csv.c_str(), std::strerror(errno));
        std::exit(kExitFail);
    }
    if (csv != nullptr) std::fprintf(csv, "n,type,scan,implementation,ms,gb_per_s,copy_gb_per_s\n");
    std::printf("Timing: median of %d after %d warm-ups, events, the L2 cleaned before each repetition; GB/s counts\n"
                "n*4 read + n*4 written; copy = the better of cudaMemcpyAsync and the SM copy (8 x 16 B a thread,\n"
                "2 or 4 blocks/SM) of the same bytes in this run; vs CUB = CUB's time / ours\n",
                opt.reps, kWarmups);
    std::vector<std::vector<std::string>> rows, check_rows, copy_rows;
    std::vector<Timed> timed;
    for (size_t n : sizes) {
        const size_t bytes = n * 4;
        const float memcpy_ms = coldMedianMs(buf, opt.reps, "copy", [&] {
            CUDA_CHECK(cudaMemcpyAsync(buf.out, buf.in, bytes, cudaMemcpyDeviceToDevice));
        });
        float sm_ms = 1e30f;
        for (int blocks : {2, 4}) {
            sm_ms = std::min(sm_ms, coldMedianMs(buf, opt.reps, "SM copy", [&] {
                sm_copy<8><<<unsigned(blocks * buf.sms), 256>>>(static_cast<const int4*>(buf.in), static_cast<int4*>(buf.out), bytes / 16);
            }));
        }
        const double copy_ms = std::min(memcpy_ms, sm_ms);
        copy_rows.push_back({"2^" + num(unsigned(std::log2(double(n)))), fmt("%.1f", gbPerSecond(2.0 * bytes, memcpy_ms)),
                             fmt("%.1f", gbPerSecond(2.0 * bytes, sm_ms)), memcpy_ms <= sm_ms ? "cudaMemcpyAsync" : "SM copy"});
        if (csv != nullptr) std::fprintf(csv, "%zu,-,-,copy,%.5f,%.1f,%.1f\n", n, copy_ms, gbPerSecond(2.0 * bytes, copy_ms),
                                         gbPerSecond(2.0 * bytes, copy_ms));
        timeType<float>(n, seed, opt, copy_ms, buf, st, gate, check_rows, rows, timed, csv);
        if (!opt.float_only) timeType<int>(n, seed, opt, copy_ms, buf, st, gate, check_rows, rows, timed, csv);
    }
    if (csv != nullptr) std::fclose(csv);
    printTable({"n", "memcpy GB/s", "SM copy GB/s", "copy is"}, copy_rows);
    printTable(kCheckHeader, check_rows);
    printTable({"n", "type", "scan", "check", "copy GB/s", "pipelined ms", "GB/s", "of copy", "look-back of copy", "CUB ms",
                "CUB of copy", "vs CUB", "dispatch", "dispatch vs CUB"},
               rows);
    if (opt.time_log2 != 0) return;

    // The crossover: the smallest n from which the pipelined kernel beats the classic one at
    // that n and every larger timed n, in all four variants.
    size_t crossover = 0;
    for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {
        bool wins = true;
        for (const Timed& t : timed)
            if (t.n == *it && t.pipe_ms >= t.classic_ms) wins = false;
        if (!wins) break;
        crossover = *it;
    }
    std::vector<std::vector<std::string>> targets;
    const Timed* slowest = nullptr;
    for (const Timed& t : timed) {
        if (t.cub_ms > 0 && (slowest == nullptr || t.cub_ms / t.dispatch_ms < slowest->cub_ms / slowest->dispatch_ms)) slowest = &t;
        if (t.n != kBig) continue;
        const std::string which = t.type + " " + t.scan + " at 2^28";
        targets.push_back({which, ">= 0.90 of copy", fmt("%.3f", t.pipe_of_copy), t.pipe_of_copy >= 0.90 ? "met" : "not met"});
        if (t.cub_ms > 0)
            targets.push_back({which, ">= 1.21x CUB", fmt("%.2fx", t.cub_ms / t.pipe_ms), t.cub_ms / t.pipe_ms >= 1.21 ? "met" : "not met"});
    }
    if (slowest != nullptr)
        targets.push_back({"dispatch, every timed n", "no slower than CUB",
                           fmt("%.2fx", slowest->cub_ms / slowest->dispatch_ms) + " (slowest: 2^" +
                               num(unsigned(std::log2(double(slowest->n)))) + " " + slowest->type + " " + slowest->scan + ")",
                           slowest->cub_ms / slowest->dispatch_ms >= 1.0 ? "met" : "not met"});
    targets.push_back({"crossover", "PIPE_CROSSOVER_LOG2 = " + num(unsigned(PIPE_CROSSOVER_LOG2)),
                       crossover ? "pipelined wins from 2^" + num(unsigned(std::log2(double(crossover)))) : "never in this sweep",
                       crossover && crossover == (size_t(1) << PIPE_CROSSOVER_LOG2) ? "matches" : "set it from this"});
    std::printf("Targets (informational, not gated):\n");
    printTable({"what", "target", "measured", "status"}, targets);
}

// ---- host side: the ablation (a build with -DPIPE_ABLATION) ------------------------------------
// One build of the kernel per design step, each checked exactly (and exactly once a tile) and then
// timed at n = 2^28 float32, exclusive and inclusive, against the copy measured here. "steps"
// adds the design one step at a time, from drill 05's classic kernel; "without" takes one step
// out of the design; "ring" trades stages against tile size (about 192 KiB of ring in all) and
// then takes stages away at 16 KiB; "scan warps" doubles them.
#ifdef PIPE_ABLATION
namespace ablation {
constexpr int KiB = 1024;
//                               tile      stages warps bulk   chain  la-warp persistent
using NotPersistent = PipeShape<16 * KiB, 2, 4, false, true, false, false>;
using ChainInWarp = PipeShape<16 * KiB, 12, 4, false, true, false>;
using AggregatesInWarp = PipeShape<16 * KiB, 12, 4, false, false, false>;
using Design = PipeShape<16 * KiB, 12, 4, false>;
using BulkStores = PipeShape<16 * KiB, 12, 4, true>;
using Chain = PipeShape<16 * KiB, 12, 4, false, true, true>;
using Ring2x96 = PipeShape<96 * KiB, 2, 4, false>;
using Ring3x64 = PipeShape<64 * KiB, 3, 4, false>;
using Ring4x48 = PipeShape<48 * KiB, 4, 4, false>;
using Ring6x32 = PipeShape<32 * KiB, 6, 4, false>;
using Ring8x24 = PipeShape<24 * KiB, 8, 4, false>;
using Ring6x16 = PipeShape<16 * KiB, 6, 4, false>;
using Ring4x16 = PipeShape<16 * KiB, 4, 4, false>;
using Warps8 = PipeShape<16 * KiB, 12, 8, false>;
}  // namespace ablation

struct AblationRow {
    std::string group, step, knobs;
    float ms[2] = {0, 0};  // exclusive, inclusive
    bool ok = true;
};

// Checks (poisoned output, watchdog, exact, and every tile scanned once) and times one build.
template <class P>
static void ablate(const char* group, const char* step, const char* knobs, const std::vector<float>& input, Buffers& buf,
                   ScanState& st, Gate& gate, int reps, std::vector<AblationRow>& rows,
                   std::vector<std::vector<std::string>>& check_rows) {
    CUDA_CHECK((pipelined_prepare<P, float>()));
    const size_t n = input.size(), tiles = (n + P::kTile - 1) / P::kTile;
    const float* d_in = static_cast<const float*>(buf.in);
    float* d_out = static_cast<float*>(buf.out);
    AblationRow row{group, step, knobs};
    for (bool inclusive : {false, true}) {
        CUDA_CHECK(cudaMemset(buf.visits, 0, tiles * sizeof(unsigned)));
        CUDA_CHECK(cudaMemset(buf.out, 0xFF, n * sizeof(float)));
        const unsigned grid = pipelined_launch<P>(inclusive, d_in, d_out, n, st, 0, buf.visits);
        CUDA_CHECK_LAUNCH();
        const std::string what = std::string(step) + (inclusive ? " inclusive" : " exclusive");
        waitForStream(what.c_str());
        static std::vector<float> out;  // one host copy for every build (1 GiB at 2^28)
        out.resize(n);
        CUDA_CHECK(cudaMemcpy(out.data(), buf.out, n * sizeof(float), cudaMemcpyDeviceToHost));
        const Check c = checkScan(input, out, inclusive, P::kTile);
        // Not persistent: every block draws one ticket and none past the end.
        const VisitCheck v = checkVisits(buf, st, tiles, P::kPersistent ? grid : 0, 1);
        const bool ok = c.mismatches == 0 && v.ok;
        const std::string why = c.mismatches == 0 ? "exact" : "out[" + num(c.first) + "] is " + showNumber(c.actual) +
                                                                  ", should be " + showNumber(c.expected);
        gate.record("ablation " + what, ok, why + (v.ok ? "" : "; " + v.why));
        check_rows.push_back({num(n), step, "float32", inclusive ? "inclusive" : "exclusive", num(tiles), num(grid), "1",
                              num(c.mismatches), c.mismatches ? num(c.first) : "-",
                              c.mismatches ? showNumber(c.expected) : "-", c.mismatches ? showNumber(c.actual) : "-", v.why,
                              ok ? "pass" : "FAIL", knobs});
        row.ok = row.ok && ok;
        row.ms[inclusive] = coldMedianMs(buf, reps, what.c_str(), [&] { pipelined_launch<P>(inclusive, d_in, d_out, n, st, 0); });
    }
    rows.push_back(row);
}

static void runAblation(const Options& opt, Buffers& buf, ScanState& st, Gate& gate) {
    using namespace ablation;
    const size_t n = kBig, bytes = n * sizeof(float);
    std::vector<float> input;
    makeInput(n, opt.seed, input);
    upload(input, buf);
    const float memcpy_ms = coldMedianMs(buf, opt.reps, "copy", [&] {
        CUDA_CHECK(cudaMemcpyAsync(buf.out, buf.in, bytes, cudaMemcpyDeviceToDevice));
    });
    const double copy_gbs = gbPerSecond(2.0 * bytes, memcpy_ms);
    std::vector<AblationRow> rows;
    std::vector<std::vector<std::string>> check_rows;
    {  // the "before": drill 05's kernel, one tile a block, the block waiting while warp 0 looks back
        AblationRow row{"steps", "drill 05's look-back (one tile a block, CUB's structure)", "05_lookback_scan.cu"};
        for (bool inclusive : {false, true}) {
            row.ok = runChecked(Path::Classic, inclusive, input, buf, st, gate, check_rows, "ablation: the before") && row.ok;
            row.ms[inclusive] = coldMedianMs(buf, opt.reps, "classic", [&] {
                classic_launch(inclusive, static_cast<const float*>(buf.in), static_cast<float*>(buf.out), n, st, 0);
            });
        }
        rows.push_back(row);
    }
    const int r = opt.reps;
    ablate<NotPersistent>("steps", "+ roles and bulk loads, not persistent (a tile a block, 2 x 16 KiB)",
                          "PIPE_PERSISTENT=0 PIPE_PUBLISH=1 PIPE_LOOKAHEAD_WARP=0 PIPE_STAGES=2", input, buf, st, gate, r,
                          rows, check_rows);
    ablate<ChainInWarp>("steps", "+ persistent: one block an SM, a 12 x 16 KiB ring", "PIPE_PUBLISH=1 PIPE_LOOKAHEAD_WARP=0",
                        input, buf, st, gate, r, rows, check_rows);
    ablate<AggregatesInWarp>("steps", "+ publish aggregates only: a running prefix, no chain of P", "PIPE_LOOKAHEAD_WARP=0",
                             input, buf, st, gate, r, rows, check_rows);
    ablate<Design>("steps", "+ a look-ahead warp: the design (the default build)", "(defaults)", input, buf, st, gate, r,
                   rows, check_rows);
    ablate<BulkStores>("steps", "+ bulk stores (cp.async.bulk from the stage)", "PIPE_BULK_STORE=1", input, buf, st, gate, r,
                       rows, check_rows);
    ablate<Chain>("without", "the design with the chain of P (no publish-aggregate-first)", "PIPE_PUBLISH=1", input, buf,
                  st, gate, r, rows, check_rows);
    ablate<AggregatesInWarp>("without", "the design without the look-ahead warp", "PIPE_LOOKAHEAD_WARP=0", input, buf, st,
                             gate, r, rows, check_rows);
    ablate<Ring2x96>("ring", "2 stages x 96 KiB", "PIPE_STAGES=2 PIPE_TILE_KIB=96", input, buf, st, gate, r, rows, check_rows);
    ablate<Ring3x64>("ring", "3 stages x 64 KiB", "PIPE_STAGES=3 PIPE_TILE_KIB=64", input, buf, st, gate, r, rows, check_rows);
    ablate<Ring4x48>("ring", "4 stages x 48 KiB", "PIPE_STAGES=4 PIPE_TILE_KIB=48", input, buf, st, gate, r, rows, check_rows);
    ablate<Ring6x32>("ring", "6 stages x 32 KiB (the first default)", "PIPE_STAGES=6 PIPE_TILE_KIB=32", input, buf, st, gate,
                     r, rows, check_rows);
    ablate<Ring8x24>("ring", "8 stages x 24 KiB", "PIPE_STAGES=8 PIPE_TILE_KIB=24", input, buf, st, gate, r, rows, check_rows);
    ablate<Ring6x16>("ring", "6 stages x 16 KiB (96 KiB in flight)", "PIPE_STAGES=6", input, buf, st, gate, r, rows,
                     check_rows);
    ablate<Ring4x16>("ring", "4 stages x 16 KiB (64 KiB in flight)", "PIPE_STAGES=4", input, buf, st, gate, r, rows,
                     check_rows);
    ablate<Warps8>("scan warps", "8 scan warps (352 threads)", "PIPE_SCAN_WARPS=8", input, buf, st, gate, r, rows, check_rows);

    std::printf("Ablation: n = 2^28 float32, median of %d after %d warm-ups, the L2 cleaned before each; of copy =\n"
                "GB/s (n*4 read + n*4 written) / cudaMemcpyAsync's %.1f GB/s in this run; every build checked exactly first\n",
                opt.reps, kWarmups, copy_gbs);
    printTable(kCheckHeader, check_rows);
    auto of_copy = [&](float ms) { return gbPerSecond(2.0 * bytes, ms) / copy_gbs; };
    std::vector<std::vector<std::string>> table;
    for (const AblationRow& a : rows)
        table.push_back({a.group, a.step, fmt("%.4f", a.ms[0]), fmt("%.3f", of_copy(a.ms[0])), fmt("%.4f", a.ms[1]),
                         fmt("%.3f", of_copy(a.ms[1])), a.ok ? "pass" : "FAIL", a.knobs});
    printTable({"group", "step", "excl ms", "of copy", "incl ms", "of copy", "check", "knobs (-D)"}, table);
    // The same, as the README's Markdown table (paste it as is).
    cudaDeviceProp prop{};  // openDevice chose device 0
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("\nablation markdown (pipelined_bench --ablation on the %s; copy %.0f GB/s):\n\n", prop.name, copy_gbs);
    // change: a step against the step before it; every other row against the design.
    std::printf("| group | design step | `-D` knobs | exclusive, of copy | inclusive, of copy | change (mean) |\n");
    std::printf("|---|---|---|---|---|---|\n");
    double before = 0, design = 0;
    for (const AblationRow& a : rows)
        if (a.knobs == "(defaults)") design = 0.5 * (of_copy(a.ms[0]) + of_copy(a.ms[1]));
    for (const AblationRow& a : rows) {
        const double mean = 0.5 * (of_copy(a.ms[0]) + of_copy(a.ms[1]));
        const double base = a.group == "steps" ? before : design;
        const std::string change = base > 0 ? fmt("%+.3f", mean - base) + (a.group == "steps" ? "" : " vs the design")
                                            : std::string("-");
        std::printf("| %s | %s | `%s` | %.3f | %.3f | %s |\n", a.group.c_str(), a.step.c_str(), a.knobs.c_str(),
                    of_copy(a.ms[0]), of_copy(a.ms[1]), a.ok ? change.c_str() : "CHECK FAILED");
        if (a.group == "steps") before = mean;
    }
    std::printf("\n");
}
#endif

// ---- main ------------------------------------------------------------------------------------
int main(int argc, char** argv) {
    Options opt = parseOptions(argc, argv);
    if (!opt.seed_given) opt.seed = clockSeed();  // short enough to retype
    g_timeout_s = opt.timeout_s;
    const cudaDeviceProp prop = openDevice(reinterpret_cast<const void*>(pipelined_scan<TunedPipe, float, false>));
    Buffers buf;
    buf.sms = prop.multiProcessorCount;
    prepareKernels();
    cudaFuncAttributes attr{};
    CUDA_CHECK(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(pipelined_scan<TunedPipe, float, false>)));
    std::printf("GPU: %s (compute capability %d.%d), %d SMs, L2 %d MiB, %zu KiB shared memory a block (opt-in)\n", prop.name,
                prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize >> 20, prop.sharedMemPerBlockOptin >> 10);
    std::printf("Kernel: pipelined_scan, %d threads (producer, look-ahead, reduce, %d scan warps), %d-element (%d KiB) tiles,\n"
                "        %d stages = %zu bytes of shared memory, %s stores, look-ahead pause %u ns, %d registers;\n"
                "        the dispatcher uses it from n = 2^%d (below: drill 05's look-back, %d-element tiles)\n",
                TunedPipe::kThreads, TunedPipe::kScanWarps, TunedPipe::kTile, PIPE_TILE_KIB, TunedPipe::kStages,
                sizeof(PipeSmem<TunedPipe, float>), TunedPipe::kBulkStore ? "bulk (cp.async.bulk)" : "16-byte vector",
                kLookAheadSleepNs, attr.numRegs, PIPE_CROSSOVER_LOG2, TunedShape::kTile);
    std::printf("Seed: %" PRIu64 " (--seed %" PRIu64 " reproduces the inputs and the random sizes)\n\n", opt.seed, opt.seed);

    size_t max_n = (size_t(1) << 24) + 1;
    if (opt.quick) max_n = (size_t(1) << 22) + 1;
    if (opt.full || opt.stress || (opt.timed() && (opt.bench || opt.time_log2 == 0 || opt.time_log2 > 24))) max_n = kBig;
    if (opt.time_log2 != 0 && opt.time_log2 <= 24) max_n = (size_t(1) << 24) + 1;
    CUDA_CHECK(cudaMalloc(&buf.in, max_n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&buf.out, max_n * sizeof(float)));
    buf.visit_capacity = max_n / TinyPipe::kTile + 1;
    CUDA_CHECK(cudaMalloc(&buf.visits, buf.visit_capacity * sizeof(unsigned)));
    ScanState st;
    CUDA_CHECK(st.reserve(max_n / std::min<size_t>(TinyPipe::kTile, TunedShape::kTile) + 1));
    if (opt.timed()) {
        buf.cub_temp_bytes = std::max(cubTempBytes<float>(max_n), cubTempBytes<int>(max_n));
        CUDA_CHECK(cudaMalloc(&buf.cub_temp, std::max<size_t>(buf.cub_temp_bytes, 1)));
        buf.flush_words = std::max<size_t>(2 * size_t(prop.l2CacheSize), size_t(8) << 20) / sizeof(int4);
        CUDA_CHECK(cudaMalloc(&buf.flush, buf.flush_words * sizeof(int4)));
        CUDA_CHECK(cudaMemset(buf.flush, 0, buf.flush_words * sizeof(int4)));
        CUDA_CHECK(cudaMalloc(&buf.sink, sizeof(int)));
    }

    Gate gate;
    if (opt.time_log2 == 0 && !opt.ablation) {
        const std::vector<SizeCase> sizes = checkSizes(opt, opt.seed, buf.sms);
        std::vector<std::vector<std::string>> rows;
        std::printf("Checks: every size, float32 and int32, exclusive and inclusive, against the CPU; visits = every\n"
                    "tile scanned exactly once and the ticket counter left at tiles + grid\n");
        checkType<float>(sizes, opt.seed, buf, st, gate, rows);
        checkType<int>(sizes, opt.seed, buf, st, gate, rows);
        printTable(kCheckHeader, rows);
    }
    if (opt.stress) runStress(opt.seed, buf, st, gate);
#ifdef PIPE_ABLATION
    if (opt.ablation) runAblation(opt, buf, st, gate);
#endif
    if (opt.timed() && !opt.ablation) runTiming(opt, opt.seed, buf, st, gate);

    st.release();
    CUDA_CHECK(cudaFree(buf.in));
    CUDA_CHECK(cudaFree(buf.out));
    CUDA_CHECK(cudaFree(buf.visits));
    if (buf.cub_temp != nullptr) CUDA_CHECK(cudaFree(buf.cub_temp));
    if (buf.flush != nullptr) CUDA_CHECK(cudaFree(buf.flush));
    if (buf.sink != nullptr) CUDA_CHECK(cudaFree(buf.sink));
    if (!gate.failures.empty()) {
        std::printf("gated failures:\n");
        for (size_t f = 0; f < std::min<size_t>(12, gate.failures.size()); ++f) std::printf("  %s\n", gate.failures[f].c_str());
        std::printf("FAILED: %zu of %d gated checks\n", gate.failures.size(), gate.checks);
        return kExitFail;
    }
    std::printf("all %d gated checks passed: the pipelined scan matched the CPU exactly and scanned every tile once\n",
                gate.checks);
    return kExitPass;
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
