// Day 31: the Hillis-Steele block scan, the race that hides at one warp, and its fix.
//
// Four kernels scan one tile per block at 32, 64, 256 and 1024 threads. Two are broken on
// purpose (the in-place race; the double buffer that forgets to copy idle lanes forward):
// their mismatches are printed, never gated. The two double-buffered kernels are gated.
//
// Build (the page's T4, then Hopper, then both in one binary):
//   nvcc -std=c++17 -O3 -arch=sm_75 -o scan scan.cu
//   nvcc -std=c++17 -O3 -arch=sm_90 -o scan scan.cu
//   nvcc -std=c++17 -O3 -gencode arch=compute_75,code=sm_75 -gencode arch=compute_90,code=[sm_90,compute_90] -o scan scan.cu
//
// The kernels, in reading order, and the command that runs each:
//   scanInclusiveInPlace       the textbook loop in one shared array: the race  ./scan --kernel in-place
//   scanInclusiveNoCopy        two halves, but idle lanes skip their copy      ./scan --kernel no-copy
//   hillisSteeleDoubleBuffer   the fix: a __device__ helper the next two share
//   scanInclusiveDoubleBuffer  gated: the inclusive scan                       ./scan --kernel double-buffer
//   scanExclusiveDoubleBuffer  gated: the same scan, shifted one place         ./scan --kernel exclusive
//
// Run: ./scan is the page's run (1,049,187 elements, (i % 8) + 1); --pattern random --seed 7
// for random integers 0..15; --n 1025 --block 256 for one size; --help for every flag.
// Observe: in place at 32 threads can show zero mismatches while 64 and up do not; a zero at
// one warp is luck, and compute-sanitizer --tool racecheck ./scan --n 4096 --block 256
// --kernel in-place reports the hazard either way. Lane by lane: trace.cu beside this file.
//
// Exit status: 0 every gated kernel matched; 1 a gated kernel mismatched or a CUDA call
// failed; 2 bad command line; 3 no usable GPU (no device, driver too old, no code for it).
// Layout: CPU reference, kernels, host side, main, then the plumbing every lesson shares.

#include <cuda_runtime.h>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <iterator>
#include <algorithm>
#include <string>
#include <vector>

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;
constexpr const char* kProgram = "scan";  // error lines start with it

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

// ---- CPU reference ---------------------------------------------------------
// Each block scans its own tile of `block` elements: the running total restarts at every tile.

static void scanTilesInclusive(const std::vector<float>& in, unsigned int block, std::vector<float>& out) {
    out.resize(in.size());
    float running = 0.0f;
    for (size_t i = 0; i < in.size(); ++i) {
        if (i % block == 0) running = 0.0f;
        running += in[i];
        out[i] = running;
    }
}

static void scanTilesExclusive(const std::vector<float>& in, unsigned int block, std::vector<float>& out) {
    out.resize(in.size());
    float running = 0.0f;
    for (size_t i = 0; i < in.size(); ++i) {
        if (i % block == 0) running = 0.0f;
        out[i] = running;
        running += in[i];
    }
}

// ---- GPU kernels -----------------------------------------------------------
// One tile of blockDim.x <= 1024 per block; lanes past the end load 0, the identity for +, so a
// partial tile needs no special case. Guards are on data, never on a barrier: every thread
// of the block must reach every __syncthreads().
constexpr unsigned int kMaxThreadsPerBlock = 1024;

// BROKEN (reported, not gated). Lane tid reads tile[tid - offset] in the same
// step in which lane tid - offset overwrites it; the barrier sits after both.
// Which value it sees depends on scheduling.
__global__ void scanInclusiveInPlace(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    __shared__ float tile[kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;

    tile[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int offset = 1; offset < blockDim.x; offset *= 2) {
        if (tid >= offset) {
            const float seen = tile[tid - offset];  // the race: lane tid - offset may have written already
            tile[tid] += seen;
        }
        __syncthreads();
    }
    if (i < n) out[i] = tile[tid];
}

// BROKEN (reported, not gated). Two halves remove the race, but lanes with
// nothing to add skip their write, so the destination half keeps whatever it
// held two steps earlier (or never held anything) and the next step reads it.
__global__ void scanInclusiveNoCopy(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;

    tile[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    unsigned int src = 0;
    for (unsigned int offset = 1; offset < width; offset *= 2) {
        const unsigned int dst = 1 - src;
        const float mine = tile[src * width + tid];
        if (tid >= offset) tile[dst * width + tid] = mine + tile[src * width + tid - offset];
        // missing: the copy-forward (else ... = mine); the word stays whatever it was two steps ago
        __syncthreads();
        src = dst;
    }
    if (i < n) out[i] = tile[src * width + tid];
}

// Shared by the two gated kernels: Hillis-Steele over two halves of `tile`.
// Each step reads only half `src` and writes only half `dst`, so one barrier a
// step separates every read of a half from the next write to it. Every lane
// writes every step; idle lanes copy their value across. Returns the half that
// holds the finished inclusive scan. Ends with a barrier, so afterwards any lane
// may read any word of that half.
__device__ unsigned int hillisSteeleDoubleBuffer(float* tile, unsigned int tid, unsigned int width) {
    unsigned int src = 0;
    for (unsigned int offset = 1; offset < width; offset *= 2) {
        const unsigned int dst = 1 - src;
        const float mine = tile[src * width + tid];
        tile[dst * width + tid] = tid >= offset ? mine + tile[src * width + tid - offset] : mine;
        __syncthreads();
        src = dst;
    }
    return src;
}

// GATED. Inclusive scan of each tile, double-buffered.
// Work: scanAdds(blockDim.x) adds, scanSteps(blockDim.x) barriers after the load.
__global__ void scanInclusiveDoubleBuffer(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;

    tile[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    const unsigned int src = hillisSteeleDoubleBuffer(tile, tid, blockDim.x);
    if (i < n) out[i] = tile[src * blockDim.x + tid];
}

// GATED. Exclusive scan of each tile: the inclusive scan, then each lane stores
// its left neighbour's prefix and lane 0 stores the identity. The loop's last
// barrier already ordered every write before these reads.
__global__ void scanExclusiveDoubleBuffer(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;

    tile[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    const unsigned int src = hillisSteeleDoubleBuffer(tile, tid, blockDim.x);
    if (i < n) out[i] = tid > 0 ? tile[src * blockDim.x + tid - 1] : 0.0f;
}

// ---- host side -------------------------------------------------------------

constexpr unsigned int kDefaultBlocks[] = {32, 64, 256, 1024};
constexpr size_t kDefaultN = 1049187;  // leaves a partial last tile at every default block size
constexpr size_t kMaxN = size_t(1) << 30;

// What compareExact (in the plumbing block) reports: how many elements differ, and the first.
struct Mismatch {
    size_t count = 0;
    size_t first = 0;
    float expected = 0.0f;
    float actual = 0.0f;
};

// A row of the flag table parseFlags (in the plumbing block) reads: --name, a value or not, what it sets.
struct Flag { const char* name; bool takes_value; std::function<void(const std::string&)> set; };

// The plumbing this file uses from the block after main (identical in every CUDA lesson file).
[[maybe_unused]] static uint64_t splitmix64(uint64_t& state);
[[maybe_unused]] static uint64_t clockSeed();
[[noreturn]] [[maybe_unused]] static void usageError(const char* fmt, const char* what);
[[maybe_unused]] static unsigned long long numberFlag(const std::string&, unsigned long long, unsigned long long, bool, const char*);
[[maybe_unused]] static int choiceFlag(const std::string& v, const std::vector<std::string>& names, const char* complaint);
template <typename Table> static void parseFlags(int argc, char** argv, const Table& flags);
[[maybe_unused]] static cudaDeviceProp openDevice(const void* probe);
[[maybe_unused]] static Mismatch compareExact(const std::vector<float>& expected, const std::vector<float>& actual);

// ---- work per block, at compile time --------------------------------------
//
// Hillis-Steele with `threads` lanes runs one step per power of two below
// `threads`; at offset d the lanes tid >= d each do one add. A sequential scan does threads - 1.

constexpr unsigned int scanSteps(unsigned int threads) {
    unsigned int steps = 0;
    for (unsigned int offset = 1; offset < threads; offset *= 2) ++steps;
    return steps;
}

constexpr unsigned long long scanAdds(unsigned int threads) {
    unsigned long long adds = 0;
    for (unsigned int offset = 1; offset < threads; offset *= 2) adds += threads - offset;
    return adds;
}

// n log2(n) - (n - 1) for powers of two: the closed form the page quotes.
static_assert(scanAdds(32) == 129 && scanAdds(64) == 321 && scanAdds(256) == 1793 && scanAdds(1024) == 9217, "work table");
static_assert(scanSteps(256) == 8 && scanSteps(1024) == 10, "work table");

// ---- input -------------------------------------------------------------------
//
// The generator is splitmix64, in the plumbing block at the end of the file: the same
// seed gives the same data with every compiler, so a failing seed reproduces anywhere.

enum class Pattern { Cycle8, Random };  // the order of --pattern's names

// Small integers keep every prefix of a tile (at most 1024 * 15) far below
// 2^24, where float addition is exact, so the comparison can be `!=`.
static std::vector<float> makeInput(size_t n, Pattern pattern, uint64_t seed) {
    std::vector<float> in(n);
    uint64_t state = seed;
    for (size_t i = 0; i < n; ++i) {
        in[i] = pattern == Pattern::Cycle8 ? float(i % 8 + 1) : float(splitmix64(state) % 16);
    }
    return in;
}

using ScanKernel = void (*)(const float*, float*, size_t);

struct KernelInfo {
    const char* flag;   // --kernel spelling
    const char* label;  // table spelling
    ScanKernel kernel;
    bool inclusive;
    bool gated;
};

const KernelInfo kKernels[] = {
    {"in-place", "inclusive, in place", scanInclusiveInPlace, true, false},
    {"no-copy", "inclusive, no copy", scanInclusiveNoCopy, true, false},
    {"double-buffer", "inclusive, double buffered", scanInclusiveDoubleBuffer, true, true},
    {"exclusive", "exclusive, double buffered", scanExclusiveDoubleBuffer, false, true},
};
constexpr size_t kKernelCount = sizeof(kKernels) / sizeof(kKernels[0]);

struct Options {
    size_t n = kDefaultN;
    std::vector<unsigned int> blocks{std::begin(kDefaultBlocks), std::end(kDefaultBlocks)};
    std::vector<size_t> kernels{0, 1, 2, 3};
    Pattern pattern = Pattern::Cycle8;
    uint64_t seed = 0;
    bool seed_given = false;
    std::string dump_reference;  // non-empty: write the CPU reference there and exit, no GPU needed
};

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: scan [--n N] [--block B[,B...]] [--kernel K[,K...]]\n"
                 "            [--pattern cycle8|random] [--seed S] [--dump-reference FILE] [--help]\n"
                 "\n"
                 "  --n N             elements to scan, 0..%zu (default %zu)\n"
                 "  --block B,...     threads per block = tile size, each 1..%u (default 32,64,256,1024)\n"
                 "  --kernel K,...    any of in-place, no-copy, double-buffer, exclusive (default all)\n"
                 "  --pattern P       cycle8: in[i] = (i %% 8) + 1 (default); random: integers 0..15\n"
                 "  --seed S          seed for --pattern random (default: drawn from the clock, printed)\n"
                 "  --dump-reference FILE\n"
                 "                    write the input and the CPU reference for each block size to FILE\n"
                 "                    (binary, for the test harness) and exit without touching the GPU\n"
                 "  --help            this text\n"
                 "\n"
                 "exit status: 0 every gated kernel matched, 1 a gated kernel mismatched or a CUDA call\n"
                 "failed, 2 bad command line, 3 no usable GPU\n",
                 kMaxN, kDefaultN, kMaxThreadsPerBlock);
}

static std::vector<std::string> splitCommas(const std::string& text) {
    std::vector<std::string> parts;
    for (size_t start = 0, comma = 0; comma != std::string::npos; start = comma + 1) {
        comma = text.find(',', start);
        parts.push_back(text.substr(start, comma - start));  // to the end after the last comma
    }
    return parts;
}

static Options parseOptions(int argc, char** argv) {
    Options opt;
    const Flag flags[] = {
        {"--n", true, [&](const std::string& v) {
             opt.n = size_t(numberFlag(v, 0, kMaxN, false, "--n wants a whole number from 0 to 2^30, not '%s'")); }},
        {"--block", true, [&](const std::string& v) {
             opt.blocks.clear();
             for (const std::string& part : splitCommas(v)) {
                 const char* complaint = "--block wants block sizes from 1 to 1024, not '%s'";
                 opt.blocks.push_back(unsigned(numberFlag(part, 1, kMaxThreadsPerBlock, false, complaint)));
             }
         }},
        {"--kernel", true, [&](const std::string& v) {
             opt.kernels.clear();
             for (const std::string& part : splitCommas(v)) {
                 size_t k = 0;
                 while (k < kKernelCount && part != kKernels[k].flag) ++k;
                 if (k == kKernelCount) usageError("unknown kernel '%s' (in-place, no-copy, double-buffer, exclusive)", part.c_str());
                 opt.kernels.push_back(k);
             }
         }},
        {"--pattern", true, [&](const std::string& v) {
             opt.pattern = Pattern(choiceFlag(v, {"cycle8", "random"}, "--pattern wants cycle8 or random, not '%s'")); }},
        {"--seed", true, [&](const std::string& v) {
             opt.seed = numberFlag(v, 0, UINT64_MAX, false, "--seed wants a whole number, not '%s'");
             opt.seed_given = true;
         }},
        {"--dump-reference", true, [&](const std::string& v) {
             if (v.empty()) usageError("%s needs a file name", "--dump-reference");
             opt.dump_reference = v;
         }},
    };
    parseFlags(argc, argv, flags);
    if (opt.seed_given && opt.pattern != Pattern::Random) usageError("%s only applies to --pattern random", "--seed");
    return opt;
}

// Binary layout, little-endian: "SCANREF1", u64 n, u32 block count, the n input
// floats, then per block size: u32 block, n inclusive floats, n exclusive floats.
static int dumpReference(const Options& opt, const std::vector<float>& in) {
    FILE* f = std::fopen(opt.dump_reference.c_str(), "wb");
    if (f == nullptr) {
        std::fprintf(stderr, "scan: cannot write %s: %s\n", opt.dump_reference.c_str(), std::strerror(errno));
        return kExitFail;
    }
    const uint64_t n = in.size();
    const uint32_t count = uint32_t(opt.blocks.size());
    bool ok = std::fwrite("SCANREF1", 1, 8, f) == 8 && std::fwrite(&n, sizeof n, 1, f) == 1 &&
              std::fwrite(&count, sizeof count, 1, f) == 1 && std::fwrite(in.data(), sizeof(float), n, f) == n;
    std::vector<float> inclusive, exclusive;
    for (unsigned int block : opt.blocks) {
        scanTilesInclusive(in, block, inclusive);
        scanTilesExclusive(in, block, exclusive);
        const uint32_t b = block;
        ok = ok && std::fwrite(&b, sizeof b, 1, f) == 1 && std::fwrite(inclusive.data(), sizeof(float), n, f) == n &&
             std::fwrite(exclusive.data(), sizeof(float), n, f) == n;
    }
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) {
        std::fprintf(stderr, "scan: writing %s failed\n", opt.dump_reference.c_str());
        return kExitFail;
    }
    std::printf("wrote the CPU reference for %zu elements and %u block sizes to %s\n", in.size(), count,
                opt.dump_reference.c_str());
    return kExitPass;
}

static void printWorkTable(const std::vector<unsigned int>& blocks) {
    std::printf("Work per block (constexpr, evaluated by the compiler)\n");
    std::printf(" threads    steps    scan adds   sequential\n");
    std::printf(" -------    -----    ---------   ----------\n");
    for (unsigned int block : blocks) {
        std::printf(" %7u  %7u  %11llu  %11llu\n", block, scanSteps(block), scanAdds(block), block - 1ull);
    }
    std::printf("\n");
}

int main(int argc, char** argv) {
    Options opt = parseOptions(argc, argv);
    if (opt.pattern == Pattern::Random && !opt.seed_given) opt.seed = clockSeed();
    const std::vector<float> h_in = makeInput(opt.n, opt.pattern, opt.seed);
    if (!opt.dump_reference.empty()) return dumpReference(opt, h_in);

    const cudaDeviceProp prop = openDevice(reinterpret_cast<const void*>(&scanInclusiveDoubleBuffer));
    std::printf("GPU: %s (compute capability %d.%d), warp size %d\n", prop.name, prop.major, prop.minor, prop.warpSize);
    std::printf("Max threads per block: %d, shared memory per block: %zu B\n\n", prop.maxThreadsPerBlock,
                prop.sharedMemPerBlock);
    for (unsigned int block : opt.blocks) {
        if (block > unsigned(prop.maxThreadsPerBlock)) {
            std::fprintf(stderr, "scan: --block %u exceeds this GPU's %d threads per block\n", block,
                         prop.maxThreadsPerBlock);
            return kExitUsage;
        }
    }

    printWorkTable(opt.blocks);

    if (opt.pattern == Pattern::Cycle8) {
        std::printf("%zu elements, in[i] = (i %% 8) + 1, one tile per block\n", opt.n);
    } else {
        std::printf("%zu elements, random integers 0..15 (seed %" PRIu64 "), one tile per block\n", opt.n, opt.seed);
    }

    const size_t bytes = opt.n * sizeof(float);
    float* d_in = nullptr;
    float* d_out = nullptr;
    CUDA_CHECK(cudaMalloc(&d_in, bytes > 0 ? bytes : 1));
    CUDA_CHECK(cudaMalloc(&d_out, bytes > 0 ? bytes : 1));
    if (bytes > 0) CUDA_CHECK(cudaMemcpy(d_in, h_in.data(), bytes, cudaMemcpyHostToDevice));

    std::vector<float> h_out(opt.n), reference;
    size_t gated_checks = 0, gated_failures = 0;
    std::vector<std::string> failure_details;

    std::printf("threads  kernel                       mismatches   first bad  gated\n");
    std::printf("-------  ---------------------------  ----------   ---------  -----\n");
    for (unsigned int block : opt.blocks) {
        for (size_t k : opt.kernels) {
            const KernelInfo& info = kKernels[k];
            (info.inclusive ? scanTilesInclusive : scanTilesExclusive)(h_in, block, reference);
            // 0xFF bytes are a NaN: an element the kernel never writes can not
            // pass for a right answer left over from the previous kernel.
            if (bytes > 0) {
                CUDA_CHECK(cudaMemset(d_out, 0xFF, bytes));
                const size_t grid = (opt.n + block - 1) / block;
                info.kernel<<<unsigned(grid), block>>>(d_in, d_out, opt.n);
                CUDA_CHECK(cudaGetLastError());       // a bad launch configuration
                CUDA_CHECK(cudaDeviceSynchronize());  // a fault in the kernel
                CUDA_CHECK(cudaMemcpy(h_out.data(), d_out, bytes, cudaMemcpyDeviceToHost));
            }

            const Mismatch m = compareExact(reference, h_out);
            const std::string first = m.count > 0 ? std::to_string(m.first) : "-";
            std::printf("%7u  %-27s  %10zu   %9s  %5s\n", block, info.label, m.count, first.c_str(), info.gated ? "yes" : "no");

            if (info.gated) {
                ++gated_checks;
                if (m.count > 0) {
                    ++gated_failures;
                    char line[200];
                    std::snprintf(line, sizeof line, "  %u threads, %s: out[%zu] is %g, should be %g (%zu wrong)", block,
                                  info.label, m.first, double(m.actual), double(m.expected), m.count);
                    failure_details.push_back(line);
                }
            }
        }
    }
    std::printf("\n");

    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));

    if (!failure_details.empty()) {
        std::printf("gated mismatches:\n");
        for (const std::string& line : failure_details) std::printf("%s\n", line.c_str());
        std::printf("\n");
    }
    if (gated_checks == 0) {
        std::printf("no gated kernel selected: the broken kernels above are reported, never gated\n");
        return kExitPass;
    }
    if (gated_failures > 0) {
        std::printf("FAILED: %zu of %zu gated checks mismatched the reference\n", gated_failures, gated_checks);
        return kExitFail;
    }
    bool every_gated_kernel = true;
    for (size_t k = 0; k < kKernelCount; ++k) {
        if (kKernels[k].gated && std::count(opt.kernels.begin(), opt.kernels.end(), k) == 0) every_gated_kernel = false;
    }
    if (every_gated_kernel) std::printf("both double-buffered kernels matched the reference at every block size\n");
    else std::printf("every gated kernel matched the reference at every block size (%zu checks)\n", gated_checks);
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
