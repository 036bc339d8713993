// A05 stretch drill 05 in HIP, the bench: checks, stress and timing of a look-back kernel file.
//
// The HIP port of 05_lookback_scan.cu: the same algorithm, checks, tables, flags and
// exit statuses; only the runtime calls (hip*), the lane-level primitives and the
// library column differ. One kernel replaces Lab 1's 3-phase scan
// (a05-scan/hip/scan.cpp, Part 3). A block takes the next tile from an atomic ticket
// counter, loads it with 16-byte loads, scans it in registers, and publishes the
// tile's sum at once (flag A, "aggregate"). Wavefront 0 then looks back: its lanes
// read the descriptors of the warpSize tiles before this one in one go (64 on CDNA,
// 32 on RDNA and NVIDIA), add up aggregates back to the nearest tile that has
// published its inclusive prefix (flag P), and publish this tile's own P. The block
// adds that prefix and stores. Every element is read once and written once, a copy's
// 2n bytes against the 3-phase scan's 4n, so the copy is the ceiling.
//
// The kernel the student writes lives in its own file (exercises/05_lookback_scan_hip.cpp,
// the starter; solutions/05_lookback_scan_hip.cpp, the answer): this program #includes
// the file SUBMISSION names (default: the starter, ../05_lookback_scan_hip.cpp from
// here). Starter and answer share it, so it prints the same tables for both.
//
// Wavefront width: nothing assumes 32 or 64. The look-back window is one descriptor
// per lane of wavefront 0, lane masks are 64-bit (HIP's __ballot), and the shared
// arrays are sized for the most wavefronts a block can have (32-lane ones). Blocks
// are whole 64-lane wavefronts (kThreads a multiple of 64), so no shuffle ever reads
// a lane that does not exist.
//
// Build, from exercises/ (make stretch-hip there and in solutions/ builds both files):
//   hipcc -std=c++17 -O3 --offload-arch=gfx942 -o 05_lookback_scan_hip bench/05_lookback_scan_bench_hip.cpp    MI300
//   hipcc -std=c++17 -O3 --offload-arch=gfx90a -o 05_lookback_scan_hip bench/05_lookback_scan_bench_hip.cpp    MI200 (Debian's hipcc too)
//   nvcc -std=c++17 -O3 -arch=sm_90 -x cu -I ../harness/hip_on_cuda -o 05_lookback_scan_hip bench/05_lookback_scan_bench_hip.cpp
//                                     the same files on an NVIDIA GPU, through the project's HIP-on-CUDA header
//   ... -DSUBMISSION='"/abs/path/solutions/05_lookback_scan_hip.cpp"' ...   another kernel file
// Your GPU's target: /opt/rocm/bin/offload-arch, or rocminfo | grep gfx.
//
// The library column: with hipcc, and <rocprim/rocprim.hpp> installed (Debian:
// apt-get install librocprim-dev), every timing row also runs rocprim::exclusive_scan
// / rocprim::inclusive_scan. Without the header, or built through the HIP-on-CUDA
// header (rocPRIM does not run on NVIDIA), the column is left out and the program
// says so in its header lines.
//
// Run:
//   ./05_lookback_scan_hip               check every size below, then time n = 2^24 against a copy
//   ./05_lookback_scan_hip --full        ... and check n = 2^28 as well
//   ./05_lookback_scan_hip --bench       check and time n = 2^22 .. 2^28, float32 and int32, both scans
//   ./05_lookback_scan_hip --stress      the never-hang suite: grids of up to 4 million tiles, thousands
//                                        of times more than can be resident, each launch under a watchdog
//   ./05_lookback_scan_hip --quick       small sizes only, no timing (for the sanitizers)
//   ./05_lookback_scan_hip --check-only  every check, no timing
//   ./05_lookback_scan_hip --seed 7      reproduce a run's inputs and random sizes (the seed is printed)
//   ./05_lookback_scan_hip --help        every flag
//
// What the harness runs (the first two gate; --bench is read by a person):
//   ./05_lookback_scan_hip --check-only --full --seed 1
//   ./05_lookback_scan_hip --stress --check-only --seed 1
//   ./05_lookback_scan_hip --bench --seed 1
// and, on NVIDIA, the nvcc build through the HIP-on-CUDA header under the same three
// compute-sanitizer commands as 05_lookback_scan.cu:
//   compute-sanitizer --tool memcheck|racecheck|synccheck --error-exitcode 9 ./05_lookback_scan_hip --quick --seed 1 --timeout 300
// Every shared word here is written once per block and read after a __syncthreads().
//
// Observe:
//   The check table: one row per size, type and scan, with the first wrong index, what
//     it should be, what it is, and a diagnosis ("correct in tile 0 only" is a missing
//     carry; "tile k's carry is off by D" is a look-back that stopped early or late).
//   The timing table: GB/s counts n * 4 bytes read plus n * 4 written, for every row;
//     "of copy" divides by a device-to-device copy measured in the same run. Every
//     timed repetition starts with the L2 cleaned (a read of twice its size).
//
// Exactness: float inputs hold small non-negative integers chosen so that the sum of
// the whole array is at most 2^24 (see makeInput): then every partial sum any kernel
// forms, in any order, is an integer a float holds exactly, and every comparison is
// `!=`. At n = 2^28 that forbids 0/1 inputs (2^28 ones add up to 2^28 > 2^24), so past
// 2^24 elements the float input is sparse: exactly one 1 in every run of
// ceil(n / 2^24) elements, at a random offset. int32 inputs are random 0..3 at every
// size: their total, at most 3 * 2^28, stays below 2^31.
//
// Exit status: 0 every gated check passed; 1 a gated check failed, a HIP call failed,
// or a launch hung (the watchdog); 2 bad command line; 3 no usable GPU (no device,
// driver missing or too old, or no binary for this GPU's architecture).

#include <hip/hip_runtime.h>

#if !defined(SCANLAB_HIP_ON_CUDA) && defined(__has_include)
#if __has_include(<rocprim/rocprim.hpp>)
#include <rocprim/rocprim.hpp>
#define SCANLAB_HAVE_ROCPRIM 1
#endif
#endif
#ifndef SCANLAB_HAVE_ROCPRIM
#define SCANLAB_HAVE_ROCPRIM 0
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
constexpr const char* kProgram = "lookback_scan";  // error lines start with it

// Every runtime call goes through this: the failing expression, where, and why.
#define HIP_CHECK(call)                                                           \
    do {                                                                          \
        const hipError_t err_ = (call);                                           \
        if (err_ != hipSuccess) {                                                 \
            std::fprintf(stderr, "%s: HIP error %s (%s) in %s at %s:%d\n",        \
                         kProgram, hipGetErrorName(err_), hipGetErrorString(err_), \
                         #call, __FILE__, __LINE__);                              \
            std::exit(kExitFail);                                                 \
        }                                                                         \
    } while (0)

// A launch reports a bad configuration at once; a fault in the kernel shows at the
// next synchronisation, which waitFor (the watchdog) performs after every launch.
#define HIP_CHECK_LAUNCH() HIP_CHECK(hipGetLastError())

// ---- the kernel file ------------------------------------------------------------
//
// Everything the GPU runs except flush_l2 below: Descriptor and its flags, TileShape,
// TunedShape, the pauses and lookback_scan<S, T, kInclusive>.
#ifndef SUBMISSION
#define SUBMISSION "../05_lookback_scan_hip.cpp"
#endif
#include SUBMISSION

constexpr size_t kBig = size_t(1) << 28;                 // --full, --bench, --stress
constexpr size_t kDefaultTimedN = size_t(1) << 24;       // the default run's timing size
constexpr int kDefaultReps = 20;
constexpr int kMaxReps = 1000;
constexpr int kWarmups = 2;
constexpr int kDefaultTimeoutS = 20;
constexpr int kStressRepeats = 8;  // back-to-back launches that reuse the descriptors and the counter

constexpr unsigned int kMaxEpoch = (1u << 30) - 1;  // the descriptor's epoch has 30 bits
// The tuned shape comes from the kernel file; the two small ones make grids of up to
// 4 million tiles for --stress (and the scalar path for the sanitizers).
constexpr int kThreads = TunedShape::kThreads;
constexpr int kItems = TunedShape::kItems;
constexpr int kSmallThreads = 64;       // --stress: 256-element tiles
constexpr int kSmallItems = 4;
constexpr int kTinyThreads = 64;        // --stress: 64-element tiles, one wavefront (two on wave32), scalar loads
constexpr int kTinyItems = 1;
using SmallShape = TileShape<kSmallThreads, kSmallItems>;
using TinyShape = TileShape<kTinyThreads, kTinyItems>;

// What compareExact (in the plumbing block) reports; this program compares with
// checkScan below, which also diagnoses the carry.
struct Mismatch {
    size_t count = 0;
    size_t first = 0;
    float expected = 0.0f;
    float actual = 0.0f;
};

// A row of the flag table parseFlags (in the plumbing block) reads: --name, a value or not, what it sets.
struct Flag { const char* name; bool takes_value; std::function<void(const std::string&)> set; };

// The host plumbing this file uses, defined in the block at its end (identical in every
// HIP lesson file: splitmix64, clockSeed, numberFlag, parseFlags, usageError,
// noGpu, fmt, num, printTable, median, gbPerSecond, baseArch, openDevice, compareExact, medianMs).
static void printUsage(FILE* to);
[[maybe_unused]] static uint64_t splitmix64(uint64_t& state);
[[maybe_unused]] static uint64_t clockSeed();
[[maybe_unused]] static unsigned long long numberFlag(const std::string&, unsigned long long, unsigned long long, bool, const char*);
template <typename Table> static void parseFlags(int argc, char** argv, const Table& flags);
[[noreturn]] [[maybe_unused]] static void usageError(const char* fmt, const char* what);
[[noreturn]] [[maybe_unused]] static void noGpu(const char* why, hipError_t err);
[[maybe_unused]] static std::string fmt(const char* format, double value);
[[maybe_unused]] static std::string num(unsigned long long value);
[[maybe_unused]] static void printTable(const std::vector<std::string>& header,
                                        const std::vector<std::vector<std::string>>& rows);
[[maybe_unused]] static float median(std::vector<float> values);
[[maybe_unused]] static double gbPerSecond(double bytes, double ms);
[[maybe_unused]] static std::string baseArch(const char* gcn_arch_name);
[[maybe_unused]] static hipDeviceProp_t openDevice(const void* probe);
[[maybe_unused]] static Mismatch compareExact(const std::vector<float>& expected, const std::vector<float>& actual);
template <typename Enqueue>
static float medianMs(int warmups, int reps, Enqueue&& enqueue);

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
    return bits == 0xFFFFFFFFu;  // hipMemset(0xFF): a NaN as float32, -1 as int32 (all answers are >= 0)
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

// ---- host side: options ------------------------------------------------------

struct Options {
    bool quick = false;
    bool check_only = false;
    bool full = false;
    bool bench = false;
    bool stress = false;
    uint64_t seed = 0;
    bool seed_given = false;
    int reps = kDefaultReps;
    int time_log2 = 0;  // --time-log2: time this one size (0: the default or --bench's sizes)
    int timeout_s = kDefaultTimeoutS;
    bool timed() const { return !check_only && !quick; }
};

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: 05_lookback_scan_hip [--full] [--bench] [--stress] [--quick] [--check-only]\n"
                 "                            [--time-log2 K] [--seed S] [--reps R] [--timeout S] [--help]\n"
                 "\n"
                 "  --full         also check n = 2^28\n"
                 "  --bench        time n = 2^22 .. 2^28 (float32 and int32, exclusive and inclusive)\n"
                 "                 against a device-to-device copy (and rocPRIM when built in); without it,\n"
                 "                 n = 2^24 only\n"
                 "  --stress       the never-hang suite: %d-element tiles over 2^24 + 7 elements, and\n"
                 "                 %d-, %d- and %d-element tiles over 2^28: far more tiles than can be\n"
                 "                 resident; each case is checked after one launch and after %d more\n"
                 "                 back to back\n"
                 "  --quick        small sizes only (at most 2^20 + 3), no timing: for the sanitizers\n"
                 "  --check-only   every check, no timing\n"
                 "  --seed S       seed of the inputs and the random sizes (default: drawn from the clock,\n"
                 "                 printed)\n"
                 "  --time-log2 K  time n = 2^K only, K from 10 to 28: one size while you try a tuning knob\n"
                 "  --reps R       timed repetitions per measurement, median reported, 1..%d (default %d)\n"
                 "  --timeout S    watchdog: a launch that has not finished after S seconds is reported as\n"
                 "                 hung and the program exits 1; 0 waits for ever (default %d)\n"
                 "  --help         this text\n"
                 "\n"
                 "exit status: 0 every gated check passed, 1 a gated check failed, a HIP call failed or a\n"
                 "launch hung, 2 bad command line, 3 no usable GPU\n",
                 TinyShape::kTile, TinyShape::kTile, SmallShape::kTile, TunedShape::kTile, kStressRepeats, kMaxReps, kDefaultReps,
                 kDefaultTimeoutS);
}

static Options parseOptions(int argc, char** argv) {
    Options opt;
    const Flag flags[] = {
        {"--full", false, [&](const std::string&) { opt.full = true; }},
        {"--bench", false, [&](const std::string&) { opt.bench = true; }},
        {"--stress", false, [&](const std::string&) { opt.stress = true; }},
        {"--quick", false, [&](const std::string&) { opt.quick = true; }},
        {"--check-only", false, [&](const std::string&) { opt.check_only = true; }},
        {"--seed", true, [&](const std::string& v) {
             opt.seed = numberFlag(v, 0, UINT64_MAX, false, "--seed wants a whole number, not '%s'");
             opt.seed_given = true;
         }},
        {"--reps", true, [&](const std::string& v) {
             opt.reps = int(numberFlag(v, 1, kMaxReps, false, "--reps wants a whole number from 1 to 1000, not '%s'"));
         }},
        {"--time-log2", true, [&](const std::string& v) {
             opt.time_log2 = int(numberFlag(v, 10, 28, false, "--time-log2 wants a whole number from 10 to 28, not '%s'"));
         }},
        {"--timeout", true, [&](const std::string& v) {
             opt.timeout_s = int(numberFlag(v, 0, 86400, false, "--timeout wants whole seconds from 0 to 86400, not '%s'"));
         }},
    };
    parseFlags(argc, argv, flags);
    if (opt.quick && (opt.full || opt.bench || opt.stress)) {
        usageError("%s is small sizes only: it does not combine with --full, --bench or --stress", "--quick");
    }
    if ((opt.check_only || opt.quick) && opt.time_log2 != 0) usageError("%s times one size: it does not combine with --check-only or --quick", "--time-log2");
    if (opt.check_only && opt.bench) usageError("%s times nothing: it does not combine with --bench", "--check-only");
    return opt;
}

// ---- host side: device -------------------------------------------------------

// openDevice (the plumbing) gives status 3 with one line for every way of having no
// usable GPU; the tuned kernel's attributes (its registers) go into the header lines.
static hipDeviceProp_t openLookbackDevice(hipFuncAttributes& tuned_attr) {
    const void* tuned = reinterpret_cast<const void*>(&lookback_scan<TunedShape, float, false>);
    const hipDeviceProp_t prop = openDevice(tuned);
    HIP_CHECK(hipFuncGetAttributes(&tuned_attr, tuned));
    return prop;
}

// ---- host side: the watchdog -------------------------------------------------
//
// Every launch is followed by an event that is waited for here, never with a plain
// synchronise: a look-back that waits on a tile that never becomes ready hangs the
// GPU, and this turns the hang into a line and exit status 1. _Exit skips the
// runtime's teardown, which could wait on the hung kernel; the driver ends the
// kernel with the process.

static int g_timeout_s = kDefaultTimeoutS;

// true once the work before `e` has finished, false while it runs; an error exits.
// (The HIP-on-CUDA header has no hipEventQuery: there it is cudaEventQuery.)
static bool eventDone(hipEvent_t e) {
#if defined(SCANLAB_HIP_ON_CUDA)
    const cudaError_t err = cudaEventQuery(e);
    if (err == cudaErrorNotReady) return false;
#else
    const hipError_t err = hipEventQuery(e);
    if (err == hipErrorNotReady) return false;
#endif
    HIP_CHECK(err);
    return true;
}

static void waitFor(hipEvent_t done, const char* what) {
    if (g_timeout_s == 0) {
        HIP_CHECK(hipEventSynchronize(done));
        return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(g_timeout_s);
    while (true) {
        if (eventDone(done)) return;
        if (std::chrono::steady_clock::now() > deadline) {
            std::printf("\nHUNG: %s did not finish within %d s (--timeout). A tile is waiting for a predecessor\n"
                        "that never becomes ready: look at the look-back's wait and exit conditions "
                        "(lookback_exclusive_prefix)\n",
                        what, g_timeout_s);
            std::fflush(stdout);
            std::fflush(stderr);
            std::_Exit(kExitFail);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

static void waitForStream(const char* what) {
    hipEvent_t done;
    HIP_CHECK(hipEventCreate(&done));
    HIP_CHECK(hipEventRecord(done));
    waitFor(done, what);
    HIP_CHECK(hipEventDestroy(done));
}

// ---- host side: launches -----------------------------------------------------

enum class Shape { Tuned, Small, Tiny };

static size_t tileOf(Shape s) {
    switch (s) {
        case Shape::Tuned: return TunedShape::kTile;
        case Shape::Small: return SmallShape::kTile;
        case Shape::Tiny: return TinyShape::kTile;
    }
    return 1;
}

static std::string shapeName(Shape s) {
    switch (s) {
        case Shape::Tuned: return std::to_string(kThreads) + "x" + std::to_string(kItems);
        case Shape::Small: return std::to_string(kSmallThreads) + "x" + std::to_string(kSmallItems);
        case Shape::Tiny: return std::to_string(kTinyThreads) + "x" + std::to_string(kTinyItems);
    }
    return "?";
}

static size_t tilesOf(size_t n, size_t tile) { return (n + tile - 1) / tile; }

// The look-back's state on the device: one descriptor per tile, the ticket counter,
// and the epoch of the next launch. Both arrays start zeroed (epoch 0 is never used,
// so every word reads as X) and are grown only outside timed regions.
struct LookbackState {
    Descriptor* descriptors = nullptr;
    size_t capacity = 0;
    unsigned int* counter = nullptr;
    unsigned int epoch = 0;

    void reserve(size_t tiles) {
        if (counter == nullptr) {
            HIP_CHECK(hipMalloc(&counter, sizeof(unsigned int)));
            HIP_CHECK(hipMemset(counter, 0, sizeof(unsigned int)));
        }
        if (tiles <= capacity) return;
        if (descriptors != nullptr) HIP_CHECK(hipFree(descriptors));
        HIP_CHECK(hipMalloc(&descriptors, tiles * sizeof(Descriptor)));
        HIP_CHECK(hipMemset(descriptors, 0, tiles * sizeof(Descriptor)));
        capacity = tiles;
        epoch = 0;
    }
    unsigned int nextEpoch() {
        if (epoch == kMaxEpoch) {  // before the 30 bits wrap: clear, so no old word can match
            HIP_CHECK(hipMemset(descriptors, 0, capacity * sizeof(Descriptor)));
            epoch = 0;
        }
        return ++epoch;
    }
    void release() {
        if (descriptors != nullptr) HIP_CHECK(hipFree(descriptors));
        if (counter != nullptr) HIP_CHECK(hipFree(counter));
        descriptors = nullptr;
        counter = nullptr;
        capacity = 0;
    }
};

template <class S, typename T>
static void launchShape(bool inclusive, const T* d_in, T* d_out, size_t n, LookbackState& st) {
    const size_t tiles = tilesOf(n, S::kTile);
    if (tiles > st.capacity || tiles > size_t(INT_MAX)) {
        std::fprintf(stderr, "lookback_scan: %zu tiles but room for %zu descriptors\n", tiles, st.capacity);
        std::exit(kExitFail);
    }
    const unsigned int epoch = st.nextEpoch();
    if (inclusive) {
        lookback_scan<S, T, true><<<unsigned(tiles), S::kThreads>>>(d_in, d_out, n, st.descriptors, st.counter, epoch);
    } else {
        lookback_scan<S, T, false><<<unsigned(tiles), S::kThreads>>>(d_in, d_out, n, st.descriptors, st.counter, epoch);
    }
    HIP_CHECK_LAUNCH();
}

// Enqueue one scan; nothing here allocates or waits, so it can be timed.
template <typename T>
static void lookbackScan(Shape shape, bool inclusive, const T* d_in, T* d_out, size_t n, LookbackState& st) {
    if (n == 0) return;  // no zero-size launches
    switch (shape) {
        case Shape::Tuned: launchShape<TunedShape>(inclusive, d_in, d_out, n, st); break;
        case Shape::Small: launchShape<SmallShape>(inclusive, d_in, d_out, n, st); break;
        case Shape::Tiny: launchShape<TinyShape>(inclusive, d_in, d_out, n, st); break;
    }
}

// Blocks of `shape` resident on one CU at once, from the occupancy calculator.
// (The HIP-on-CUDA header has no hipOccupancyMaxActiveBlocksPerMultiprocessor:
// there it is CUDA's.)
template <class S>
static int residentBlocks() {
    int blocks = 0;
    const void* kernel = reinterpret_cast<const void*>(&lookback_scan<S, float, false>);
#if defined(SCANLAB_HIP_ON_CUDA)
    HIP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, S::kThreads, 0));
#else
    HIP_CHECK(hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, S::kThreads, 0));
#endif
    return blocks;
}

static int residentBlocksPerSm(Shape shape) {
    switch (shape) {
        case Shape::Tuned: return residentBlocks<TunedShape>();
        case Shape::Small: return residentBlocks<SmallShape>();
        case Shape::Tiny: return residentBlocks<TinyShape>();
    }
    return 0;
}

#if SCANLAB_HAVE_ROCPRIM
// rocPRIM's device-wide scans, the library to compare with, with its default tuning
// for this GPU.
template <typename T>
static void libraryScan(bool inclusive, void* temp, size_t temp_bytes, const T* d_in, T* d_out, size_t n) {
    size_t bytes = temp_bytes;
    if (inclusive) {
        HIP_CHECK(rocprim::inclusive_scan(temp, bytes, d_in, d_out, n, rocprim::plus<T>()));
    } else {
        HIP_CHECK(rocprim::exclusive_scan(temp, bytes, d_in, d_out, T(0), n, rocprim::plus<T>()));
    }
}

template <typename T>
static size_t libraryTempBytes(size_t n) {
    size_t a = 0, b = 0;
    const T* in = nullptr;
    T* out = nullptr;
    HIP_CHECK(rocprim::exclusive_scan(nullptr, a, in, out, T(0), n, rocprim::plus<T>()));
    HIP_CHECK(rocprim::inclusive_scan(nullptr, b, in, out, n, rocprim::plus<T>()));
    return std::max(a, b);
}
#endif

// ---- host side: checking and printing ----------------------------------------

// The one-line description printed in the sizes table.
template <typename T>
static std::string inputText(size_t n) {
    char text[80];
    if (!std::is_same<T, float>::value) return "random 0..3";
    if (floatTop(n) >= 1) {
        std::snprintf(text, sizeof text, "random 0..%u", unsigned(floatTop(n)));
    } else {
        std::snprintf(text, sizeof text, "sparse: one 1 per %zu elements", sparseRun(n));
    }
    return text;
}

static std::string diagnose(const Check& c) {
    if (c.mismatches == 0) return "exact";
    if (c.never_written) return "element " + std::to_string(c.first) + " never written (still the poison)";
    if (c.tile_local && c.tiles() > 1) return "correct in tile 0 only: no tile added its predecessors";
    const size_t bad_tile = c.first / c.tile;
    const std::string before = bad_tile == 0   ? "tile 0 wrong"
                               : bad_tile == 1 ? "tile 0 exact"
                                               : "tiles 0.." + std::to_string(bad_tile - 1) + " exact";
    if (c.carry_constant) return before + "; tile " + std::to_string(bad_tile) + "'s carry is off by " + showNumber(c.carry_error);
    return before + "; wrong inside tile " + std::to_string(bad_tile);
}

static std::string pow2Name(size_t n) {
    for (int p = 0; p < 63; ++p) {
        if (n == size_t(1) << p) return "2^" + std::to_string(p);
    }
    return num(n);
}

// Gated checks: each one a comparison that must show zero mismatches.
struct Gate {
    int checks = 0;
    std::vector<std::string> failures;
    size_t no_carry = 0;  // failures that are "correct in tile 0 only"

    bool record(const std::string& what, const Check& c) {
        ++checks;
        if (c.mismatches == 0) return true;
        if (c.tile_local && c.tiles() > 1 && !c.never_written) ++no_carry;
        failures.push_back(what + ": out[" + num(c.first) + "] is " + showNumber(c.actual) + ", should be " +
                           showNumber(c.expected) + " (" + num(c.mismatches) + " wrong; " + diagnose(c) + ")");
        return false;
    }
};

template <typename T>
static void copyBack(std::vector<T>& host, const T* device, size_t n) {
    host.assign(n, T(0));
    if (n > 0) HIP_CHECK(hipMemcpy(host.data(), device, n * sizeof(T), hipMemcpyDeviceToHost));
}

// 0xFF bytes: a NaN as float32, -1 as int32. An element a kernel never writes can not
// pass for an answer left over from an earlier run.
static void poison(void* device, size_t bytes) {
    if (bytes > 0) HIP_CHECK(hipMemset(device, 0xFF, bytes));
}

static const char* scanName(bool inclusive) { return inclusive ? "inclusive" : "exclusive"; }

// Device buffers shared by every part: input, output, rocPRIM's temporary storage and
// the L2 flush buffer, all allocated once, before anything is timed.
struct Buffers {
    void* in = nullptr;
    void* out = nullptr;
    size_t elements = 0;
    void* lib_temp = nullptr;
    size_t lib_temp_bytes = 0;
    int4* flush = nullptr;
    size_t flush_words = 0;
    int* sink = nullptr;
    int sms = 1;
};

// One scan on the device, checked; poisons first, waits under the watchdog.
template <typename T>
static Check runChecked(Shape shape, bool inclusive, const std::vector<T>& input, Buffers& buf, LookbackState& st,
                        std::vector<T>& out, const char* what) {
    const size_t n = input.size();
    poison(buf.out, n * sizeof(T));
    lookbackScan(shape, inclusive, static_cast<const T*>(buf.in), static_cast<T*>(buf.out), n, st);
    waitForStream(what);
    copyBack(out, static_cast<const T*>(buf.out), n);
    return checkScan(input, out, inclusive, tileOf(shape));
}

template <typename T>
static void upload(const std::vector<T>& input, Buffers& buf) {
    if (!input.empty()) HIP_CHECK(hipMemcpy(buf.in, input.data(), input.size() * sizeof(T), hipMemcpyHostToDevice));
}

// ---- host side: timing -------------------------------------------------------
//
// kWarmups untimed runs, then per repetition: clean the L2 (outside the events),
// event, the operation, event; the median of the repetitions is reported. Not the
// plumbing's medianMs: every repetition here starts with a cold L2, and every wait
// goes through the watchdog.

static void flushL2(const Buffers& buf) {
    flush_l2<<<unsigned(4 * buf.sms), 512>>>(buf.flush, buf.flush_words, buf.sink);
    HIP_CHECK_LAUNCH();
}

template <typename Enqueue>
static float coldMedianMs(const Buffers& buf, int reps, const char* what, Enqueue&& enqueue) {
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    for (int w = 0; w < kWarmups; ++w) enqueue();
    waitForStream(what);
    std::vector<float> ms(size_t(reps), 0.0f);
    for (int r = 0; r < reps; ++r) {
        flushL2(buf);
        HIP_CHECK(hipEventRecord(start));
        enqueue();
        HIP_CHECK(hipEventRecord(stop));
        waitFor(stop, what);
        HIP_CHECK(hipEventElapsedTime(&ms[size_t(r)], start, stop));
    }
    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    return median(ms);
}

// ---- host side: the checks ---------------------------------------------------

struct SizeCase {
    size_t n;
    Shape shape;
    std::string why;
};

static std::vector<SizeCase> checkSizes(const Options& opt, uint64_t seed) {
    const size_t t = TunedShape::kTile;
    const size_t tiny = TinyShape::kTile;
    std::vector<SizeCase> sizes = {
        {0, Shape::Tuned, "empty: no launch, nothing written"},
        {1, Shape::Tuned, "one element: tile 0 alone, scalar path"},
        {t - 1, Shape::Tuned, "tile - 1: one partial tile, no look-back"},
        {t, Shape::Tuned, "one full tile: float4 path, no look-back"},
        {t + 1, Shape::Tuned, "tile + 1: the first carry, into a 1-element tile"},
        {(size_t(1) << 20) + 3, Shape::Tuned, "2^20 + 3: n not a multiple of 4, partial last tile"},
        {101 * tiny + 5, Shape::Tiny, "tiny tiles: " + num(tilesOf(101 * tiny + 5, tiny)) + " of them, so a window may have to move back"},
    };
    uint64_t state = seed ^ 0xA5A5A5A5A5A5A5A5ull;
    const int randoms = opt.quick ? 1 : 3;
    const uint64_t random_max = opt.quick ? (uint64_t(1) << 16) : (uint64_t(1) << 22);
    for (int r = 0; r < randoms; ++r) {
        const size_t n = size_t(2 + splitmix64(state) % (random_max - 1));
        sizes.push_back({n, Shape::Tuned, "random size (seed " + num(seed) + ")"});
    }
    if (!opt.quick) {
        sizes.push_back({(size_t(1) << 24) + 1, Shape::Tuned, "2^24 + 1: many tiles, far more than are resident"});
        sizes.push_back({(size_t(1) << 20) + 3, Shape::Tiny,
                         "2^20 + 3 in tiny tiles: " + num(tilesOf((size_t(1) << 20) + 3, tiny)) + " of them"});
    }
    if (opt.full) sizes.push_back({kBig, Shape::Tuned, "2^28: the benchmark's largest size"});
    return sizes;
}

template <typename T>
static void checkType(const std::vector<SizeCase>& sizes, uint64_t seed, Buffers& buf, LookbackState& st, Gate& gate,
                      std::vector<std::vector<std::string>>& rows) {
    std::vector<T> input, out;
    for (const SizeCase& sc : sizes) {
        makeInput(sc.n, seed, input);
        upload(input, buf);
        for (bool inclusive : {false, true}) {
            const std::string what = std::string(typeName<T>()) + " " + scanName(inclusive) + " n=" + num(sc.n) +
                                     " tile " + shapeName(sc.shape);
            const Check c = runChecked(sc.shape, inclusive, input, buf, st, out, what.c_str());
            const bool ok = gate.record(what, c);
            rows.push_back({num(sc.n), shapeName(sc.shape), typeName<T>(), scanName(inclusive), num(c.mismatches),
                            c.mismatches ? num(c.first) : "-", c.mismatches ? showNumber(c.expected) : "-",
                            c.mismatches ? showNumber(c.actual) : "-", diagnose(c), ok ? "pass" : "FAIL"});
        }
    }
}

static void runChecks(const Options& opt, uint64_t seed, Buffers& buf, LookbackState& st, Gate& gate) {
    const std::vector<SizeCase> sizes = checkSizes(opt, seed);
    std::vector<std::vector<std::string>> size_rows, rows;
    for (const SizeCase& sc : sizes) {
        size_rows.push_back({num(sc.n), shapeName(sc.shape), num(tilesOf(sc.n, tileOf(sc.shape))),
                             inputText<float>(sc.n), inputText<int>(sc.n), sc.why});
    }
    std::printf("Checks: every size below, float32 and int32, exclusive and inclusive, against the CPU\n");
    printTable({"n", "tile", "tiles", "float32 input", "int32 input", "why"}, size_rows);
    checkType<float>(sizes, seed, buf, st, gate, rows);
    checkType<int>(sizes, seed, buf, st, gate, rows);
    printTable({"n", "tile", "type", "scan", "mismatches", "first bad", "should be", "is", "diagnosis", "gated"}, rows);
}

// ---- host side: the never-hang suite -----------------------------------------

template <typename T>
static void stressType(size_t n, const std::vector<Shape>& shapes, uint64_t seed, Buffers& buf, LookbackState& st,
                       Gate& gate, std::vector<std::vector<std::string>>& rows) {
    std::vector<T> input, out;
    makeInput(n, seed, input);
    upload(input, buf);
    for (Shape shape : shapes) {
        const size_t tiles = tilesOf(n, tileOf(shape));
        const size_t resident = size_t(residentBlocksPerSm(shape)) * size_t(buf.sms);
        for (bool inclusive : {false, true}) {
            const std::string what = std::string("stress: ") + typeName<T>() + " " + scanName(inclusive) + " n=" +
                                     num(n) + " tile " + shapeName(shape);
            const Check once = runChecked(shape, inclusive, input, buf, st, out, what.c_str());
            // kStressRepeats more, back to back with no host wait between them: each
            // must find the counter reset by the previous launch's last ticket and
            // ignore the previous epoch's descriptors.
            poison(buf.out, n * sizeof(T));
            for (int r = 0; r < kStressRepeats; ++r) {
                lookbackScan(shape, inclusive, static_cast<const T*>(buf.in), static_cast<T*>(buf.out), n, st);
            }
            const std::string what_repeated = what + " (" + num(kStressRepeats) + " back to back)";
            waitForStream(what_repeated.c_str());
            copyBack(out, static_cast<const T*>(buf.out), n);
            const Check repeated = checkScan(input, out, inclusive, tileOf(shape));
            const bool once_ok = gate.record(what, once);
            const bool repeated_ok = gate.record(what_repeated, repeated);
            const bool ok = once_ok && repeated_ok;
            const Check& shown = once.mismatches ? once : repeated;
            rows.push_back({pow2Name(n), shapeName(shape), num(tiles), num(resident),
                            fmt("%.0fx", double(tiles) / double(std::max<size_t>(resident, 1))), typeName<T>(),
                            scanName(inclusive), "1 + " + num(kStressRepeats), num(once.mismatches + repeated.mismatches),
                            shown.mismatches ? num(shown.first) : "-", diagnose(shown), ok ? "pass" : "FAIL"});
        }
    }
}

static void runStress(uint64_t seed, Buffers& buf, LookbackState& st, Gate& gate) {
    std::printf("Stress: grids of far more tiles than can be resident; %s\n",
                g_timeout_s > 0 ? ("every launch under the " + num(unsigned(g_timeout_s)) + " s watchdog").c_str()
                                : "no watchdog (--timeout 0)");
    std::printf("(\"resident\" = blocks per CU from the occupancy calculator x %d CUs. Had tiles been taken by\n"
                "blockIdx.x rather than by ticket, a tile could spin on a predecessor with no CU yet: grids this\n"
                "much larger than what fits at once are where that hang would show)\n",
                buf.sms);
    std::vector<std::vector<std::string>> rows;
    const size_t mid = (size_t(1) << 24) + 7;
    stressType<float>(mid, {Shape::Tiny}, seed, buf, st, gate, rows);
    stressType<int>(mid, {Shape::Tiny}, seed, buf, st, gate, rows);
    stressType<float>(kBig, {Shape::Tiny, Shape::Small, Shape::Tuned}, seed, buf, st, gate, rows);
    stressType<int>(kBig, {Shape::Tiny, Shape::Small, Shape::Tuned}, seed, buf, st, gate, rows);
    printTable({"n", "tile", "tiles", "resident", "tiles/resident", "type", "scan", "launches", "mismatches",
                "first bad", "diagnosis", "gated"},
               rows);
}

// ---- host side: timing against the copy (and rocPRIM) -------------------------

template <typename T>
static void benchType(size_t n, uint64_t seed, int reps, double copy_ms, Buffers& buf, LookbackState& st, Gate& gate,
                      std::vector<std::vector<std::string>>& rows) {
    std::vector<T> input, out;
    makeInput(n, seed, input);
    upload(input, buf);
    const T* d_in = static_cast<const T*>(buf.in);
    T* d_out = static_cast<T*>(buf.out);
    const double bytes = 2.0 * double(n) * sizeof(T);
    const double copy_gbs = gbPerSecond(bytes, copy_ms);
    for (bool inclusive : {false, true}) {
        const std::string what = std::string("timed ") + typeName<T>() + " " + scanName(inclusive) + " n=" + num(n);
        const Check mine = runChecked(Shape::Tuned, inclusive, input, buf, st, out, what.c_str());
        bool ok = gate.record(what, mine);
        const float ms = coldMedianMs(buf, reps, what.c_str(), [&] { lookbackScan(Shape::Tuned, inclusive, d_in, d_out, n, st); });
        const double gbs = gbPerSecond(bytes, ms);
        std::vector<std::string> row = {pow2Name(n), typeName<T>(), scanName(inclusive), "", fmt("%.1f", copy_gbs),
                                        fmt("%.4f", ms), fmt("%.1f", gbs), fmt("%.2f", gbs / copy_gbs)};
#if SCANLAB_HAVE_ROCPRIM
        poison(buf.out, n * sizeof(T));
        libraryScan(inclusive, buf.lib_temp, buf.lib_temp_bytes, d_in, d_out, n);
        waitForStream("rocPRIM");
        copyBack(out, static_cast<const T*>(d_out), n);
        ok = gate.record(what + " (rocPRIM)", checkScan(input, out, inclusive, std::max<size_t>(n, 1))) && ok;
        const float lib_ms = coldMedianMs(buf, reps, "rocPRIM", [&] { libraryScan(inclusive, buf.lib_temp, buf.lib_temp_bytes, d_in, d_out, n); });
        const double lib_gbs = gbPerSecond(bytes, lib_ms);
        row.insert(row.end(), {fmt("%.4f", lib_ms), fmt("%.1f", lib_gbs), fmt("%.2f", lib_gbs / copy_gbs),
                               fmt("%.2fx", lib_ms / ms)});
#endif
        row[3] = ok ? "pass" : "FAIL";
        rows.push_back(row);
    }
}

static void runTiming(const Options& opt, uint64_t seed, Buffers& buf, LookbackState& st, Gate& gate) {
    std::vector<size_t> sizes;
    if (opt.time_log2 != 0) {
        sizes.push_back(size_t(1) << opt.time_log2);
    } else if (opt.bench) {
        for (int p = 22; p <= 28; ++p) sizes.push_back(size_t(1) << p);
    } else {
        sizes.push_back(kDefaultTimedN);
    }
    std::printf("Timing: median of %d after %d warm-up runs, device events, the L2 cleaned before every repetition.\n"
                "GB/s counts n * 4 bytes read + n * 4 written; \"copy\" is hipMemcpyAsync device to device of the\n"
                "same bytes, measured in this run%s\n",
                opt.reps, kWarmups,
                SCANLAB_HAVE_ROCPRIM ? "; \"vs rocPRIM\" is rocPRIM's time / the look-back scan's time" : "");
    std::vector<std::vector<std::string>> rows;
    for (size_t n : sizes) {
        const size_t bytes = n * sizeof(float);
        const float copy_ms = coldMedianMs(buf, opt.reps, "copy", [&] {
            HIP_CHECK(hipMemcpyAsync(buf.out, buf.in, bytes, hipMemcpyDeviceToDevice));
        });
        benchType<float>(n, seed, opt.reps, copy_ms, buf, st, gate, rows);
        benchType<int>(n, seed, opt.reps, copy_ms, buf, st, gate, rows);
    }
    std::vector<std::string> header = {"n", "type", "scan", "check", "copy GB/s", "look-back ms", "GB/s", "of copy"};
#if SCANLAB_HAVE_ROCPRIM
    header.insert(header.end(), {"rocPRIM ms", "rocPRIM GB/s", "rocPRIM of copy", "vs rocPRIM"});
#endif
    printTable(header, rows);
}

// ---- main --------------------------------------------------------------------

int main(int argc, char** argv) {
    Options opt = parseOptions(argc, argv);
    if (!opt.seed_given) opt.seed = clockSeed();  // short enough to retype
    g_timeout_s = opt.timeout_s;

    hipFuncAttributes attr{};
    const hipDeviceProp_t prop = openLookbackDevice(attr);
    Buffers buf;
    buf.sms = prop.multiProcessorCount;
    const int resident = residentBlocksPerSm(Shape::Tuned);

    std::printf("GPU: %s (%s), wavefront size %d, %d compute units, L2 cache %d MiB\n", prop.name, prop.gcnArchName,
                prop.warpSize, prop.multiProcessorCount, prop.l2CacheSize >> 20);
    std::printf("Kernel: lookback_scan, %d threads x %d items = %d-element tiles, %s\n"
                "        look-back window %d tiles (one per lane); %d registers a thread; %d blocks per CU resident =\n"
                "        %d tiles in flight\n",
                kThreads, kItems, TunedShape::kTile, TunedShape::kChunk == 4 ? "16-byte float4/int4 loads and stores" : "scalar loads and stores",
                prop.warpSize, attr.numRegs, resident, resident * prop.multiProcessorCount);
#if SCANLAB_HAVE_ROCPRIM
    std::printf("Library: rocPRIM %d (rocprim::exclusive_scan / inclusive_scan), timed beside every row\n",
                int(ROCPRIM_VERSION));
#elif defined(SCANLAB_HIP_ON_CUDA)
    std::printf("Library: none: built through the HIP-on-CUDA header, where rocPRIM does not run (05_lookback_scan.cu\n"
                "         has the CUB column); the timing table leaves the library columns out\n");
#else
    std::printf("Library: none: <rocprim/rocprim.hpp> was not found at compile time (Debian: apt-get install\n"
                "         librocprim-dev); the timing table leaves the library columns out\n");
#endif
    std::printf("Seed: %" PRIu64 " (--seed %" PRIu64 " reproduces the inputs and the random sizes)\n", opt.seed, opt.seed);
    std::printf("Exactness: float32 inputs sum to at most 2^24 over the whole array, so every float sum is exact;\n"
                "int32 inputs are 0..3, so every sum is below 2^31. Every comparison is exact (!=).\n\n");

    // Everything on the device is allocated here, before anything is timed.
    size_t max_n = (size_t(1) << 24) + 1;
    if (opt.quick) max_n = size_t(1) << 21;
    if (opt.full || opt.bench || opt.stress || opt.time_log2 > 24) max_n = kBig;
    size_t max_tiles = tilesOf(max_n, TunedShape::kTile);
    if (opt.stress) max_tiles = tilesOf(kBig, TinyShape::kTile);
    max_tiles = std::max(max_tiles, tilesOf((size_t(1) << 20) + 3, TinyShape::kTile));
    buf.elements = max_n;
    HIP_CHECK(hipMalloc(&buf.in, max_n * sizeof(float)));
    HIP_CHECK(hipMalloc(&buf.out, max_n * sizeof(float)));
    LookbackState st;
    st.reserve(max_tiles);
    if (opt.timed()) {
#if SCANLAB_HAVE_ROCPRIM
        const size_t timed_max = opt.bench || opt.time_log2 > 24 ? kBig : kDefaultTimedN;
        buf.lib_temp_bytes = std::max(libraryTempBytes<float>(timed_max), libraryTempBytes<int>(timed_max));
        HIP_CHECK(hipMalloc(&buf.lib_temp, std::max<size_t>(buf.lib_temp_bytes, 1)));
#endif
        buf.flush_words = std::max<size_t>(2 * size_t(prop.l2CacheSize), size_t(8) << 20) / sizeof(int4);
        HIP_CHECK(hipMalloc(&buf.flush, buf.flush_words * sizeof(int4)));
        HIP_CHECK(hipMemset(buf.flush, 0, buf.flush_words * sizeof(int4)));
        HIP_CHECK(hipMalloc(&buf.sink, sizeof(int)));
    }

    Gate gate;
    runChecks(opt, opt.seed, buf, st, gate);
    if (opt.stress) runStress(opt.seed, buf, st, gate);
    if (opt.timed()) runTiming(opt, opt.seed, buf, st, gate);

    st.release();
    HIP_CHECK(hipFree(buf.in));
    HIP_CHECK(hipFree(buf.out));
    if (buf.lib_temp != nullptr) HIP_CHECK(hipFree(buf.lib_temp));
    if (buf.flush != nullptr) HIP_CHECK(hipFree(buf.flush));
    if (buf.sink != nullptr) HIP_CHECK(hipFree(buf.sink));

    if (!gate.failures.empty()) {
        constexpr size_t kListed = 12;
        std::printf("gated mismatches:\n");
        for (size_t f = 0; f < std::min(kListed, gate.failures.size()); ++f) std::printf("  %s\n", gate.failures[f].c_str());
        if (gate.failures.size() > kListed) std::printf("  ... and %zu more (every one is in the tables above)\n", gate.failures.size() - kListed);
        std::printf("\n");
        if (gate.no_carry == gate.failures.size()) {
            std::printf("FAILED: %zu of %d gated checks mismatched; every tile after the first got no carry from its "
                        "predecessors: write the look-back in lookback_exclusive_prefix (the TODO region)\n",
                        gate.failures.size(), gate.checks);
        } else {
            std::printf("FAILED: %zu of %d gated checks mismatched; first: %s; look at lookback_exclusive_prefix "
                        "(the TODO region) first\n",
                        gate.failures.size(), gate.checks, gate.failures.front().c_str());
        }
        return kExitFail;
    }
    std::printf("all %d gated checks passed: the single-pass look-back scan matched the CPU exactly at every size\n",
                gate.checks);
    return kExitPass;
}

// ==== plumbing, identical in every HIP lesson file ==================================
//
// The host helpers every lesson program needs and none teaches: the input generator,
// reading numbers off the command line, the two ways of giving up (a bad command line,
// no usable GPU), opening the device, and printing. The block is the same text in every HIP lesson file,
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
[[noreturn]] [[maybe_unused]] static void noGpu(const char* why, hipError_t err) {
    std::fprintf(stderr, "%s: no usable GPU: %s (%s)\n", kProgram, why, hipGetErrorName(err));
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

// The GPU's target without its feature flags: "gfx90a:sramecc+:xnack-" -> "gfx90a".
[[maybe_unused]] static std::string baseArch(const char* gcn_arch_name) {
    const std::string arch = gcn_arch_name;
    return arch.substr(0, arch.find(':'));
}

// The device every program uses, or status 3 with one line for every way of having no
// usable GPU: no device, a driver too old for this runtime, no code object for this
// GPU (asking for the attributes of `probe`, one of the program's kernels, fails
// before any launch would).
[[maybe_unused]] static hipDeviceProp_t openDevice(const void* probe) {
    int count = 0;
    const hipError_t err = hipGetDeviceCount(&count);
    if (err == hipErrorNoDevice || (err == hipSuccess && count == 0)) noGpu("no HIP device found", hipErrorNoDevice);
    if (err == hipErrorInsufficientDriver) noGpu("the GPU driver is missing or older than this program's HIP runtime", err);
    if (err == hipErrorNoBinaryForGpu) {
        noGpu("this binary has no code for this GPU's architecture; rebuild with --offload-arch set to the GPU's "
              "target (/opt/rocm/bin/offload-arch prints it)", err);
    }
    if (err != hipSuccess) noGpu("the HIP runtime could not start", err);

    HIP_CHECK(hipSetDevice(0));
    hipDeviceProp_t prop{};
    HIP_CHECK(hipGetDeviceProperties(&prop, 0));

    hipFuncAttributes attr{};
    const hipError_t image = hipFuncGetAttributes(&attr, probe);
    if (image != hipSuccess) {
        const std::string arch = baseArch(prop.gcnArchName);
        char why[200];
        std::snprintf(why, sizeof why, "this binary has no code for %s; rebuild with --offload-arch=%s", arch.c_str(),
                      arch.c_str());
        noGpu(why, image);
    }
    return prop;
}

// Device memory for `count` elements of T (hipMalloc aligns far past the 16 bytes of a vector load).
template <typename T>
static T* deviceArray(size_t count) {
    T* p = nullptr;
    HIP_CHECK(hipMalloc(&p, count * sizeof(T)));
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
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    for (int w = 0; w < warmups; ++w) enqueue();
    HIP_CHECK(hipDeviceSynchronize());
    std::vector<float> ms(size_t(reps), 0.0f);
    for (int r = 0; r < reps; ++r) {
        HIP_CHECK(hipEventRecord(start));
        enqueue();
        HIP_CHECK(hipEventRecord(stop));
        HIP_CHECK(hipEventSynchronize(stop));
        HIP_CHECK(hipEventElapsedTime(&ms[size_t(r)], start, stop));
    }
    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    HIP_CHECK(hipDeviceSynchronize());
    return median(ms);
}

// ==== end of plumbing ================================================================
