// A05 Lab 2: stream compaction, std::copy_if on the GPU, built on the scan.
//
// Keep the non-zero elements of an array, in their original order, with no atomics:
//   mark    : flags[i] = (in[i] != 0)
//   scan    : offsets = exclusive scan of flags   (offsets[i] IS the output slot of a kept in[i])
//   scatter : if (flags[i]) out[offsets[i]] = in[i]
//   count   : kept = offsets[n-1] + flags[n-1]     (the total the exclusive scan dropped)
// The scan is Lab 1's 3-phase scan (copied: lesson files stand alone) on unsigned integers,
// exact at any n this program accepts; the result is checked against std::copy_if.
//
// Build (`make cuda` from a05-scan/ does this; sm_75 is the T4, sm_90 the H100/H200):
//   nvcc -std=c++17 -O3 -lineinfo -gencode arch=compute_75,code=sm_75 -gencode arch=compute_90,code=[sm_90,compute_90] -o compaction cuda/compaction.cu
//
// The kernels, in reading order (every run runs all of them: ./compaction):
//   mark_nonzero         step 1: flags[i] = (in[i] != 0)
//   scatter_kept         step 3: out[offsets[i]] = in[i] where flags[i]
//   blelloch_block_scan, blelloch_scan_tile, add_tile_offsets
//                        step 2, the 3-phase exclusive scan of the flags   ./compaction --threads 1024
//
// Run: ./compaction (4194304 elements, half zero at random); --keep 0.1 --seed 7; --pattern
// alternating|all-zero|no-zero; --n 268435456; --check-only --n 257; --help.
// Observe: the kept count and every kept value match std::copy_if, in order, on every run; an
// atomic counter would hand out slots in whatever order the hardware finished. The price is
// two extra n-element arrays and their traffic: compare "useful" GB/s with the total.
// Exit status: 0 every gated check passed; 1 a gated check or a CUDA call failed; 2 bad
// command line; 3 no usable GPU (no device, driver too old, no code for its architecture).
// Layout: CPU reference, kernels, host side, main, then the plumbing all CUDA lesson files share.

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

constexpr int kExitPass = 0, kExitFail = 1, kExitUsage = 2, kExitNoGpu = 3;  // the header's exit statuses
constexpr const char* kProgram = "compaction";  // error lines start with it

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

// A launch reports a bad configuration at once (cudaGetLastError) and a fault in
// the kernel at the next synchronisation, which every check below performs.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// ---- CPU reference -----------------------------------------------------------

static std::vector<float> cpuCompaction(const std::vector<float>& in) {
    std::vector<float> kept;
    std::copy_if(in.begin(), in.end(), std::back_inserter(kept), [](float x) { return x != 0.0f; });
    return kept;
}

// ---- GPU kernels -------------------------------------------------------------
//
// Guards are on data, never on barriers; out-of-range lanes carry the identity, 0.

__global__ void mark_nonzero(const float* __restrict__ in, unsigned int* __restrict__ flags, size_t n) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) flags[i] = in[i] != 0.0f ? 1u : 0u;
}

// The element's slot is the number of kept elements before it: the exclusive scan.
__global__ void scatter_kept(const float* __restrict__ in, const unsigned int* __restrict__ flags,
                             const unsigned int* __restrict__ offsets, float* __restrict__ out, size_t n) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n && flags[i]) out[offsets[i]] = in[i];
}

// The scan, as in scan.cu (the full story is there), on unsigned int and always with the bank padding:
// CONFLICT_FREE_OFFSET moves logical index i to physical i + i/32, so tree strides of 32 and more stop
// landing in one bank. (Beware GPU Gems' two-term spelling with unparenthesised shifts: `+` binds first.)
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(i) ((i) >> LOG_NUM_BANKS)

__device__ __forceinline__ unsigned int smem_index(unsigned int i) { return i + CONFLICT_FREE_OFFSET(i); }

// Blelloch's tree over the blockDim.x values at temp[smem_index(0 .. blockDim.x-1)]:
// leaves their exclusive scan there, returns the total to thread 0. Opens and
// closes with a barrier. Adds: 2(T - 1). Barriers: 2 log2 T + 2.
__device__ unsigned int blelloch_block_scan(unsigned int* temp, unsigned int tid, unsigned int width) {
    unsigned int offset = 1;
    for (unsigned int active = width / 2; active > 0; active /= 2) {  // up-sweep
        __syncthreads();
        if (tid < active) {
            const unsigned int ai = smem_index(offset * (2 * tid + 1) - 1);
            const unsigned int bi = smem_index(offset * (2 * tid + 2) - 1);
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    __syncthreads();
    unsigned int total = 0;
    if (tid == 0) {  // the identity at the root makes the scan exclusive
        const unsigned int root = smem_index(width - 1);
        total = temp[root];
        temp[root] = 0;
    }
    for (unsigned int active = 1; active < width; active *= 2) {  // down-sweep
        offset /= 2;
        __syncthreads();
        if (tid < active) {
            const unsigned int ai = smem_index(offset * (2 * tid + 1) - 1);
            const unsigned int bi = smem_index(offset * (2 * tid + 2) - 1);
            const unsigned int left = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += left;
        }
    }
    __syncthreads();
    return total;
}

// Phase 1: exclusive scan of each tile of blockDim.x flags; thread 0 writes the
// tile's total to tile_sums[blockIdx.x] unless tile_sums is null.
__global__ void blelloch_scan_tile(const unsigned int* __restrict__ in, unsigned int* __restrict__ out,
                                   unsigned int* __restrict__ tile_sums, size_t n) {
    extern __shared__ unsigned int temp[];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;

    temp[smem_index(tid)] = i < n ? in[i] : 0u;
    const unsigned int total = blelloch_block_scan(temp, tid, blockDim.x);  // opens and closes with a barrier
    if (i < n) out[i] = temp[smem_index(tid)];
    if (tid == 0 && tile_sums != nullptr) tile_sums[blockIdx.x] = total;  // what the exclusive scan drops
}

// Phase 3: add tile t's offset to every element of tile t.
__global__ void add_tile_offsets(unsigned int* __restrict__ data, const unsigned int* __restrict__ tile_offsets,
                                 size_t n) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) data[i] += tile_offsets[blockIdx.x];
}

// ---- host side -------------------------------------------------------------

constexpr size_t kDefaultN = size_t(1) << 22, kMaxN = size_t(1) << 30;
constexpr unsigned int kMinThreads = 32, kDefaultThreads = 256, kMaxThreads = 1024;  // the scan's
constexpr unsigned int kElementwiseThreads = 256;  // mark and scatter
constexpr int kDefaultReps = 20, kMaxReps = 1000, kWarmups = 2;
constexpr double kDefaultKeep = 0.5;

// What compareExact (in the plumbing block) reports: how many elements differ, and the first.
struct Mismatch { size_t count = 0, first = 0; float expected = 0.0f, actual = 0.0f; };

// A row of the flag table parseFlags (in the plumbing block) reads: --name, a value or not, what it sets.
struct Flag { const char* name; bool takes_value; std::function<void(const std::string&)> set; };

// The plumbing this file uses from the block after main (identical in every CUDA lesson file).
[[maybe_unused]] static uint64_t splitmix64(uint64_t& state);
[[maybe_unused]] static uint64_t clockSeed();
[[noreturn]] [[maybe_unused]] static void usageError(const char* fmt, const char* what);
[[maybe_unused]] static unsigned long long numberFlag(const std::string&, unsigned long long, unsigned long long, bool, const char*);
[[maybe_unused]] static int choiceFlag(const std::string& v, const std::vector<std::string>& names, const char* complaint);
template <typename Table> static void parseFlags(int argc, char** argv, const Table& flags);
[[maybe_unused]] static std::string fmt(const char* format, double value);
[[maybe_unused]] static std::string num(unsigned long long value);
[[maybe_unused]] static std::string showValue(float v);
[[maybe_unused]] static void printTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
[[maybe_unused]] static double gbPerSecond(double bytes, double ms);
[[maybe_unused]] static cudaDeviceProp openDevice(const void* probe);
[[maybe_unused]] static Mismatch compareExact(const std::vector<float>& expected, const std::vector<float>& actual);
template <typename Enqueue> static float medianMs(int warmups, int reps, Enqueue&& enqueue);
template <typename T> static T* deviceArray(size_t count);

// ---- host side: input -------------------------------------------------------

enum class Pattern { Random, AllZero, NoZero, Alternating };
const std::vector<std::string> kPatternNames = {"random", "all-zero", "no-zero", "alternating"};  // the enum's order

// A survivor's value says where it came from, +-(1 + i % (2^24 - 1)): two survivors in the wrong
// order, or one from the wrong place, do not compare equal. Every third is negative (the predicate
// is != 0, not > 0); every value is an integer below 2^24, which a float holds exactly.
static std::vector<float> makeInput(size_t n, Pattern pattern, double keep, uint64_t seed) {
    std::vector<float> in(n, 0.0f);
    uint64_t state = seed;
    for (size_t i = 0; i < n; ++i) {
        const bool nonzero = pattern == Pattern::Random        ? double(splitmix64(state) >> 11) * 0x1.0p-53 < keep
                             : pattern == Pattern::Alternating ? i % 2 == 1
                                                               : pattern == Pattern::NoZero;
        if (nonzero) in[i] = (i % 3 == 2 ? -1.0f : 1.0f) * float(1 + i % 16777215u);
    }
    return in;
}

// ---- host side: options ------------------------------------------------------

struct Options {
    size_t n = kDefaultN;
    Pattern pattern = Pattern::Random;
    double keep = kDefaultKeep;
    bool keep_given = false;
    uint64_t seed = 0;
    bool seed_given = false;
    unsigned int threads = kDefaultThreads;
    int reps = kDefaultReps;
};

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: compaction [--n N] [--pattern random|all-zero|no-zero|alternating] [--keep F]\n"
                 "                  [--seed S] [--threads B] [--reps R] [--check-only] [--help]\n"
                 "\n"
                 "  --n N          elements, 0..%zu (default %zu)\n"
                 "  --pattern P    random: each element non-zero with probability --keep (default);\n"
                 "                 all-zero; no-zero; alternating: in[i] is zero for even i\n"
                 "  --keep F       fraction of non-zero elements for --pattern random, 0..1 (default %.1f)\n"
                 "  --seed S       seed for --pattern random (default: drawn from the clock, printed)\n"
                 "  --threads B    threads per block of the scan, a power of two from %u to %u (default %u)\n"
                 "  --reps R       timed repetitions, median reported, 0..%d (default %d); 0 checks only\n"
                 "  --check-only   the same as --reps 0 (fast; for tests and compute-sanitizer)\n"
                 "  --help         this text\n"
                 "\n"
                 "exit status: 0 every gated check passed, 1 a gated check failed or a CUDA call failed,\n"
                 "2 bad command line, 3 no usable GPU\n",
                 kMaxN, kDefaultN, kDefaultKeep, kMinThreads, kMaxThreads, kDefaultThreads, kMaxReps, kDefaultReps);
}

// A plain decimal fraction from 0 to 1: digits and at most one point, nothing else.
static bool parseFraction(const std::string& text, double& value) {
    const size_t points = size_t(std::count(text.begin(), text.end(), '.'));
    if (text.find_first_not_of("0123456789.") != std::string::npos || points > 1 || points == text.size()) return false;
    value = std::strtod(text.c_str(), nullptr);
    return value <= 1.0;  // (a failure ends the program; the value is never used)
}

static Options parseOptions(int argc, char** argv) {
    Options opt;
    const Flag flags[] = {
        {"--n", true, [&](const std::string& v) {
             opt.n = size_t(numberFlag(v, 0, kMaxN, false, "--n wants a whole number from 0 to 2^30, not '%s'")); }},
        {"--pattern", true, [&](const std::string& v) {
             opt.pattern = Pattern(choiceFlag(v, kPatternNames, "--pattern wants random, all-zero, no-zero or alternating, not '%s'"));
         }},
        {"--keep", true, [&](const std::string& v) {
             if (!parseFraction(v, opt.keep)) usageError("--keep wants a fraction from 0 to 1, such as 0.25, not '%s'", v.c_str());
             opt.keep_given = true;
         }},
        {"--seed", true, [&](const std::string& v) {
             opt.seed = numberFlag(v, 0, UINT64_MAX, false, "--seed wants a whole number, not '%s'");
             opt.seed_given = true;
         }},
        {"--threads", true, [&](const std::string& v) {
             opt.threads = unsigned(numberFlag(v, kMinThreads, kMaxThreads, true, "--threads wants a power of two from 32 to 1024, not '%s'")); }},
        {"--reps", true, [&](const std::string& v) {
             opt.reps = int(numberFlag(v, 0, kMaxReps, false, "--reps wants a whole number from 0 to 1000, not '%s'")); }},
        {"--check-only", false, [&](const std::string&) { opt.reps = 0; }},
    };
    parseFlags(argc, argv, flags);
    if (opt.seed_given && opt.pattern != Pattern::Random) usageError("%s only applies to --pattern random", "--seed");
    if (opt.keep_given && opt.pattern != Pattern::Random) usageError("%s only applies to --pattern random", "--keep");
    return opt;
}

// ---- host side: the pipeline -------------------------------------------------

static unsigned int tilesOf(size_t n, size_t tile) { return unsigned((n + tile - 1) / tile); }

// Device buffers, all allocated before anything is timed. The scan's workspace has a level
// per recursion step: level 0 scans flags into offsets; level l > 0 scans level l - 1's tile
// totals (sums[l - 1]) into scanned[l - 1].
struct Buffers {
    float* in = nullptr;
    float* out = nullptr;
    unsigned int* flags = nullptr;
    unsigned int* offsets = nullptr;
    unsigned int threads = 0;
    std::vector<size_t> sizes;
    std::vector<unsigned int*> sums, scanned;
};

static Buffers allocate(size_t n, unsigned int threads) {
    const size_t count = std::max<size_t>(n, 1);
    Buffers b{deviceArray<float>(count), deviceArray<float>(count), deviceArray<unsigned int>(count),
              deviceArray<unsigned int>(count), threads, {}, {}, {}};
    if (n > 0) b.sizes.push_back(n);
    while (!b.sizes.empty() && b.sizes.back() > threads) b.sizes.push_back(tilesOf(b.sizes.back(), threads));
    for (size_t l = 1; l < b.sizes.size(); ++l) {
        b.sums.push_back(deviceArray<unsigned int>(b.sizes[l]));
        b.scanned.push_back(deviceArray<unsigned int>(b.sizes[l]));
    }
    return b;
}

static void release(Buffers& b) {
    CUDA_CHECK(cudaFree(b.in));
    CUDA_CHECK(cudaFree(b.out));
    CUDA_CHECK(cudaFree(b.flags));
    CUDA_CHECK(cudaFree(b.offsets));
    for (unsigned int* p : b.sums) CUDA_CHECK(cudaFree(p));
    for (unsigned int* p : b.scanned) CUDA_CHECK(cudaFree(p));
}

// offsets = exclusive scan of flags, in three phases (phase 2 recursing).
static void exclusiveScan(const Buffers& b) {
    const size_t levels = b.sizes.size();
    if (levels == 0) return;  // n == 0
    const size_t smem = (b.threads + CONFLICT_FREE_OFFSET(b.threads)) * sizeof(unsigned int);  // with the padding
    auto input = [&](size_t l) -> const unsigned int* { return l == 0 ? b.flags : b.sums[l - 1]; };
    auto output = [&](size_t l) -> unsigned int* { return l == 0 ? b.offsets : b.scanned[l - 1]; };
    for (size_t l = 0; l < levels; ++l) {
        unsigned int* tile_sums = l + 1 < levels ? b.sums[l] : nullptr;
        blelloch_scan_tile<<<tilesOf(b.sizes[l], b.threads), b.threads, smem>>>(input(l), output(l), tile_sums, b.sizes[l]);
        CUDA_CHECK_LAUNCH();
    }
    for (size_t l = levels - 1; l-- > 0;) {
        add_tile_offsets<<<tilesOf(b.sizes[l], b.threads), b.threads>>>(output(l), b.scanned[l], b.sizes[l]);
        CUDA_CHECK_LAUNCH();
    }
}

// mark, scan, scatter: all the timed region holds (reading the count back synchronises).
static void compaction(const Buffers& b, size_t n) {
    if (n == 0) return;  // no zero-size launches
    const unsigned int grid = tilesOf(n, kElementwiseThreads);
    mark_nonzero<<<grid, kElementwiseThreads>>>(b.in, b.flags, n);
    CUDA_CHECK_LAUNCH();
    exclusiveScan(b);
    scatter_kept<<<grid, kElementwiseThreads>>>(b.in, b.flags, b.offsets, b.out, n);
    CUDA_CHECK_LAUNCH();
}

// ---- host side: checking -----------------------------------------------------

struct Verdict {
    size_t kept = 0;
    size_t expected_kept = 0;
    Mismatch wrong;          // among the slots below min(kept, expected)
    size_t stray = 0;        // slots at or past the expected count that were written
    const char* order = "stable";
    bool passed() const { return kept == expected_kept && wrong.count == 0 && stray == 0; }
};

// What the last run left, read back and held against std::copy_if. The output is filled
// with 0xFF bytes before a run; a slot the scatter never wrote still holds that pattern.
static Verdict judge(const Buffers& b, size_t n, const std::vector<float>& expected) {
    Verdict v;
    unsigned int last_offset = 0, last_flag = 0;  // kept = offsets[n-1] + flags[n-1]: the scan drops the last
    std::vector<float> out(n);
    if (n > 0) {
        CUDA_CHECK(cudaMemcpy(&last_offset, b.offsets + (n - 1), sizeof last_offset, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&last_flag, b.flags + (n - 1), sizeof last_flag, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(out.data(), b.out, n * sizeof(float), cudaMemcpyDeviceToHost));
    }
    const size_t kept = v.kept = size_t(last_offset) + last_flag;
    v.expected_kept = expected.size();
    const size_t both = std::min(kept, expected.size());  // the slots both should have written
    v.wrong = compareExact(std::vector<float>(expected.begin(), expected.begin() + std::ptrdiff_t(both)), out);
    for (size_t i = expected.size(); i < out.size(); ++i) {
        uint32_t bits = 0;
        std::memcpy(&bits, &out[i], sizeof bits);
        if (bits != 0xFFFFFFFFu) ++v.stray;
    }
    if (kept != expected.size()) {
        v.order = "-";
    } else if (v.wrong.count > 0) {
        std::vector<float> got(out.begin(), out.begin() + std::ptrdiff_t(kept)), want(expected);
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        v.order = got == want ? "reordered" : "wrong";
    }
    return v;
}

// A slot the scatter never wrote still holds the 0xFF poison, a NaN.
static std::string shown(float v) { return v != v ? "nan (never written)" : showValue(v); }

static std::string describe(const Verdict& v) {
    std::string text;
    if (v.kept != v.expected_kept) text += "kept " + num(v.kept) + ", std::copy_if kept " + num(v.expected_kept);
    if (v.wrong.count > 0) {
        text += (text.empty() ? "" : "; ") + std::string("out[") + num(v.wrong.first) + "] is " + shown(v.wrong.actual) +
                ", should be " + shown(v.wrong.expected) + " (" + num(v.wrong.count) + " wrong)";
    }
    if (v.stray > 0) text += (text.empty() ? "" : "; ") + num(v.stray) + " writes past the kept elements";
    return text;
}

// ---- main --------------------------------------------------------------------

int main(int argc, char** argv) {
    Options opt = parseOptions(argc, argv);
    if (opt.pattern == Pattern::Random && !opt.seed_given) opt.seed = clockSeed();

    const cudaDeviceProp prop = openDevice(reinterpret_cast<const void*>(&mark_nonzero));
    if (opt.threads > unsigned(prop.maxThreadsPerBlock)) {
        std::fprintf(stderr, "compaction: --threads %u exceeds this GPU's %d threads per block\n", opt.threads, prop.maxThreadsPerBlock);
        return kExitUsage;
    }
    std::printf("GPU: %s (compute capability %d.%d), warp size %d, %d SMs, L2 cache %d MiB\n", prop.name, prop.major,
                prop.minor, prop.warpSize, prop.multiProcessorCount, prop.l2CacheSize >> 20);

    const size_t n = opt.n;
    const std::vector<float> h_in = makeInput(n, opt.pattern, opt.keep, opt.seed);
    std::printf("Input: %zu floats, pattern %s", n, kPatternNames[size_t(opt.pattern)].c_str());
    if (opt.pattern == Pattern::Random) std::printf(" (each non-zero with probability %g, seed %" PRIu64 ")", opt.keep, opt.seed);
    std::printf("; a non-zero in[i] is +-(1 + i %% 16777215)\n");

    Buffers b = allocate(n, opt.threads);
    std::string chain;
    for (size_t l = 0; l < b.sizes.size(); ++l) chain += (l ? " -> " : "") + num(tilesOf(b.sizes[l], b.threads));
    std::printf("Scan of the flags: %u-element tiles (a block of %u threads each), %zu level%s (tiles per level: %s)\n",
                b.threads, b.threads, b.sizes.size(), b.sizes.size() == 1 ? "" : "s", chain.empty() ? "none" : chain.c_str());
    std::printf("Timing: %s\n\n", opt.reps > 0 ? ("median of " + num(unsigned(opt.reps)) + " after " + num(kWarmups) + " warm-up runs, device events").c_str()
                                              : "none (--reps 0): correctness only");

    const std::vector<float> expected = cpuCompaction(h_in);
    if (n > 0) CUDA_CHECK(cudaMemcpy(b.in, h_in.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    // Each gated check: what the last run left against std::copy_if, a row of the table, a failure line.
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> failures;
    auto check = [&](const char* row, const char* name) {
        const Verdict v = judge(b, n, expected);
        rows.push_back({row, num(v.kept), num(v.expected_kept), num(v.wrong.count), v.wrong.count ? num(v.wrong.first) : "-",
                        num(v.stray), v.order, v.passed() ? "pass" : "FAIL"});
        if (!v.passed()) failures.push_back(std::string(name) + ": " + describe(v));
        return v;
    };
    // 0xFF bytes: a NaN no kept value can equal, and the marker for "never written".
    if (n > 0) CUDA_CHECK(cudaMemset(b.out, 0xFF, n * sizeof(float)));
    compaction(b, n);
    CUDA_CHECK(cudaDeviceSynchronize());
    const Verdict first = check("copy_if", "copy_if");

    const bool timed = opt.reps > 0 && n > 0;
    std::vector<std::vector<std::string>> time_rows;
    if (timed) {
        const size_t bytes = n * sizeof(float);
        const float copy_ms =
            medianMs(kWarmups, opt.reps, [&] { CUDA_CHECK(cudaMemcpyAsync(b.out, b.in, bytes, cudaMemcpyDeviceToDevice)); });
        const double copy_gbs = gbPerSecond(2.0 * double(bytes), copy_ms);
        CUDA_CHECK(cudaMemset(b.out, 0xFF, bytes));  // poisoned again after the copy: the check after timing sees strays
        const float ms = medianMs(kWarmups, opt.reps, [&] { compaction(b, n); });

        // Useful: read n, write the kept ones. Estimated total: mark reads n floats and
        // writes n flags; the scan reads and writes n words twice (phases 1 and 3);
        // scatter reads in, flags and offsets and writes the kept ones.
        const size_t kept = first.kept;
        const double useful = double(n + kept) * 4.0;
        const double moved = (2.0 * n + 4.0 * n + 3.0 * n + double(kept)) * 4.0;
        time_rows.push_back({"copy ceiling (D2D memcpy)", fmt("%.4f", copy_ms), fmt("%.0f", 2.0 * bytes), fmt("%.1f", copy_gbs), "1.00"});
        time_rows.push_back({"compaction, useful bytes", fmt("%.4f", ms), fmt("%.0f", useful),
                             fmt("%.1f", gbPerSecond(useful, ms)), fmt("%.2f", gbPerSecond(useful, ms) / copy_gbs)});
        time_rows.push_back({"compaction, all traffic (estimated)", fmt("%.4f", ms), fmt("%.0f", moved),
                             fmt("%.1f", gbPerSecond(moved, ms)), fmt("%.2f", gbPerSecond(moved, ms) / copy_gbs)});

        check("copy_if, after timing", "copy_if after timing");
    }
    release(b);

    printTable({"check", "kept", "std::copy_if kept", "wrong values", "first bad", "stray writes", "order", "gated"}, rows);
    std::printf("kept %zu of %zu elements (%.1f%%); order %s\n\n", first.kept, n, n ? 100.0 * double(first.kept) / double(n) : 0.0,
                first.passed() ? "matches std::copy_if exactly" : "does NOT match std::copy_if");
    if (timed) printTable({"what", "time (ms)", "counted bytes", "GB/s", "of copy"}, time_rows);
    else std::printf("not timed (--reps 0 or n = 0): no copy ceiling, no GB/s\n\n");

    if (!failures.empty()) {
        std::printf("gated mismatches:\n");
        for (const std::string& line : failures) std::printf("  %s\n", line.c_str());
        std::printf("\nFAILED: %zu of %zu gated checks; first: %s\n", failures.size(), rows.size(), failures.front().c_str());
        return kExitFail;
    }
    std::printf("all %zu gated checks passed: the GPU kept the same %zu elements as std::copy_if, in the same order\n",
                rows.size(), first.kept);
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
