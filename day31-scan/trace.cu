// Day 31's kernels again, each lane recording what it read: the race, step by step.
//
// The in-place, no-copy and double-buffered kernels of scan.cu (beside this file), copied
// here with trace calls added; every added line ends in "// trace", and removed, they leave
// scan.cu's kernels token for token (harness/test_trace.py checks it). scan.cu teaches the
// kernels; this program watches them. Many blocks of `lanes` threads scan the same tile,
// in[i] = (i % 8) + 1, and every lane records at every step the value it read from lane
// tid - offset, its own value before the step and its own value after it.
//
// Build (as scan.cu):
//   nvcc -std=c++17 -O3 -arch=sm_90 -o trace trace.cu
//
// Run:
//   ./trace                                  64 lanes, two warps: the stale reads cross the warp boundary
//   ./trace --trace-lanes 32                 one warp: none
//   ./trace --trace-out race.txt             also the whole record, for race_picture.py
//   ./trace --help                           every flag
//
// Exit status: 0 the double-buffered kernel read only the previous step's values; 1 it
// read a stale value, or a CUDA call failed; 2 bad command line; 3 no usable GPU.

#include <cuda_runtime.h>

#include <cerrno>
#include <cmath>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <algorithm>
#include <string>
#include <vector>

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;
constexpr const char* kProgram = "trace";  // error lines start with it

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

// A launch reports bad configurations through cudaGetLastError and faults in
// the kernel through the next synchronisation; check both, and wait for the kernel
// (the A05 programs' CUDA_CHECK_LAUNCH checks the launch only and does not wait).
#define CUDA_CHECK_LAUNCH_AND_WAIT()             \
    do {                                         \
        CUDA_CHECK(cudaGetLastError());          \
        CUDA_CHECK(cudaDeviceSynchronize());     \
    } while (0)

constexpr unsigned int kMaxThreadsPerBlock = 1024;

// ---- GPU kernels -----------------------------------------------------------
//
// trace_lane stores what a lane read from its neighbour, its own value before the step
// and its own value after it, at g_trace[block][step][lane], 3 words (NaN: nothing to
// read). The host points g_trace at blocks x kTraceSteps x lanes x 3 words.
constexpr unsigned int kTraceSteps = 10;  // log2 of the largest block
__device__ float* g_trace = nullptr;

__device__ __forceinline__ void trace_lane(unsigned int offset, unsigned int tid, float read, float before, float after) {
    const unsigned int step = __ffs(offset) - 1;  // offset is 2^step
    float* at = g_trace + ((size_t(blockIdx.x) * kTraceSteps + step) * blockDim.x + tid) * 3;
    at[0] = read;
    at[1] = before;
    at[2] = after;
}

// scan.cu's scanInclusiveInPlace. The race: lane tid - offset may have written already.
__global__ void scanInclusiveInPlace(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    __shared__ float tile[kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;

    tile[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int offset = 1; offset < blockDim.x; offset *= 2) {
        const float mine = tile[tid];  // trace
        if (tid >= offset) {
            const float seen = tile[tid - offset];  // the race: lane tid - offset may have written already
            tile[tid] += seen;
            trace_lane(offset, tid, seen, mine, mine + seen);  // trace
        }
        if (tid < offset) trace_lane(offset, tid, NAN, mine, mine);  // trace
        __syncthreads();
    }
    if (i < n) out[i] = tile[tid];
}

// scan.cu's scanInclusiveNoCopy. Half src is not written during a step, so reading it
// again for the record reads what the lane added; an idle lane's `after` is the word
// it left uncopied.
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
        trace_lane(offset, tid, tid >= offset ? tile[src * width + tid - offset] : NAN, mine, tile[dst * width + tid]);  // trace
        // missing: the copy-forward (else ... = mine); the word stays whatever it was two steps ago
        __syncthreads();
        src = dst;
    }
    if (i < n) out[i] = tile[src * width + tid];
}

// scan.cu's hillisSteeleDoubleBuffer, and the gated inclusive kernel that calls it.
__device__ unsigned int hillisSteeleDoubleBuffer(float* tile, unsigned int tid, unsigned int width) {
    unsigned int src = 0;
    for (unsigned int offset = 1; offset < width; offset *= 2) {
        const unsigned int dst = 1 - src;
        const float mine = tile[src * width + tid];
        tile[dst * width + tid] = tid >= offset ? mine + tile[src * width + tid - offset] : mine;
        trace_lane(offset, tid, tid >= offset ? tile[src * width + tid - offset] : NAN, mine, tile[dst * width + tid]);  // trace
        __syncthreads();
        src = dst;
    }
    return src;
}

__global__ void scanInclusiveDoubleBuffer(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;

    tile[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    const unsigned int src = hillisSteeleDoubleBuffer(tile, tid, blockDim.x);
    if (i < n) out[i] = tile[src * blockDim.x + tid];
}

// ---- host side: declarations ---------------------------------------------------

using ScanKernel = void (*)(const float*, float*, size_t);

constexpr unsigned int scanSteps(unsigned int threads) {
    unsigned int steps = 0;
    for (unsigned int offset = 1; offset < threads; offset *= 2) ++steps;
    return steps;
}

// What compareExact (in the plumbing block) reports: how many elements differ, and
// the first of them.
struct Mismatch {
    size_t count = 0;
    size_t first = 0;
    float expected = 0.0f;
    float actual = 0.0f;
};

// The host plumbing this file uses, defined in the block at its end (identical in every
// CUDA lesson file: splitmix64, parseUnsigned, isPowerOfTwo, usageError, noGpu, fmt,
// num, printTable, median, gbPerSecond, openDevice, compareExact, medianMs).
static void printUsage(FILE* to);
[[maybe_unused]] static uint64_t splitmix64(uint64_t& state);
[[maybe_unused]] static bool parseUnsigned(const char* text, unsigned long long max, unsigned long long& value);
[[maybe_unused]] static bool isPowerOfTwo(unsigned long long x);
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

struct Options {
    unsigned int trace_lanes = 64;  // --trace-lanes: the traced block's size (two warps by default)
    std::string trace_out;          // --trace-out FILE: the whole record, for race_picture.py
};

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: trace [--trace-lanes L] [--trace-out FILE] [--help]\n"
                 "\n"
                 "One block size through scan.cu's in-place, no-copy and double-buffered kernels, each\n"
                 "lane recording what it read at every step; a summary of the stale reads per step.\n"
                 "\n"
                 "  --trace-lanes L   the traced block's size, a power of two from 2 to %u (default 64)\n"
                 "  --trace-out FILE  also write the whole record to FILE, for day31-scan/race_picture.py\n"
                 "  --help            this text\n"
                 "\n"
                 "exit status: 0 the double-buffered kernel read no stale value, 1 it did or a CUDA call\n"
                 "failed, 2 bad command line, 3 no usable GPU\n",
                 kMaxThreadsPerBlock);
}

static Options parseOptions(int argc, char** argv) {
    Options opt;
    for (int a = 1; a < argc; ++a) {
        std::string flag = argv[a];
        std::string value;
        bool has_value = false;
        const size_t eq = flag.find('=');
        if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = flag.substr(eq + 1);
            flag = flag.substr(0, eq);
            has_value = true;
        }
        auto needValue = [&]() -> std::string {
            if (has_value) return value;
            if (a + 1 >= argc) usageError("%s needs a value", flag.c_str());
            return argv[++a];
        };

        if (flag == "--help" || flag == "-h") {
            printUsage(stdout);
            std::exit(kExitPass);
        } else if (flag == "--trace-lanes") {
            const std::string v = needValue();
            unsigned long long lanes = 0;
            if (!parseUnsigned(v.c_str(), kMaxThreadsPerBlock, lanes) || lanes < 2 || !isPowerOfTwo(lanes)) {
                usageError("--trace-lanes wants a power of two from 2 to 1024, not '%s'", v.c_str());
            }
            opt.trace_lanes = unsigned(lanes);
        } else if (flag == "--trace-out") {
            opt.trace_out = needValue();
            if (opt.trace_out.empty()) usageError("%s needs a file name", "--trace-out");
        } else {
            usageError("unknown argument '%s'", argv[a]);
        }
    }
    return opt;
}

// ---- host side: the trace -------------------------------------------------
//
// One block of `lanes` threads, in[i] = (i % 8) + 1, through three kernels with
// g_trace set. Each lane records, at every step, what it read from lane tid - offset
// and its own value before and after. A read is STALE when it differs from what the
// lane it read held before the step: that lane had already written its new value. A
// word is STALE in the no-copy kernel when a lane that wrote nothing this step finds
// its word is not its current value. Both judgements use only the recorded values.

struct RaceStep {
    std::vector<float> read, before, after;
};

// A race shows in some blocks and not others (at 64 threads, in well under one block
// in a hundred on an H200), so many blocks scan the same tile at once, 2^18 elements in
// all, and every block's record comes back. The in-place kernel is launched again, up
// to kTraceLaunches times, until some block reads a stale value; the summary says how
// many launches it took (or that none caught it: the race is still there, see racecheck).
constexpr unsigned int kTraceElements = 1u << 18;
constexpr unsigned int kTraceLaunches = 64;
static unsigned int traceBlocks(unsigned int lanes) { return kTraceElements / lanes; }

// Equal as recorded: two unset words (NaN, read from never-written shared memory) are
// the same word, not a difference.
static bool sameValue(float a, float b) { return a == b || (a != a && b != b); }

static std::vector<std::vector<RaceStep>> traceKernel(ScanKernel kernel, unsigned int lanes) {
    const unsigned int steps = scanSteps(lanes);
    std::vector<float> input(size_t(traceBlocks(lanes)) * lanes);
    for (size_t k = 0; k < input.size(); ++k) input[k] = float(k % lanes % 8 + 1);
    float *d_in = nullptr, *d_out = nullptr, *d_trace = nullptr;
    const size_t words = size_t(traceBlocks(lanes)) * kTraceSteps * lanes * 3;
    CUDA_CHECK(cudaMalloc(&d_in, input.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, input.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_trace, words * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_in, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_trace, 0xFF, words * sizeof(float)));
    CUDA_CHECK(cudaMemcpyToSymbol(g_trace, &d_trace, sizeof d_trace));
    kernel<<<traceBlocks(lanes), lanes>>>(d_in, d_out, input.size());
    CUDA_CHECK_LAUNCH_AND_WAIT();
    std::vector<float> words_back(words);
    CUDA_CHECK(cudaMemcpy(words_back.data(), d_trace, words * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_trace));
    std::vector<std::vector<RaceStep>> blocks(traceBlocks(lanes), std::vector<RaceStep>(steps));
    for (unsigned int b = 0; b < traceBlocks(lanes); ++b) {
        for (unsigned int k = 0; k < steps; ++k) {
            for (unsigned int t = 0; t < lanes; ++t) {
                const float* at = &words_back[((size_t(b) * kTraceSteps + k) * lanes + t) * 3];
                blocks[b][k].read.push_back(at[0]);
                blocks[b][k].before.push_back(at[1]);
                blocks[b][k].after.push_back(at[2]);
            }
        }
    }
    return blocks;
}

static size_t staleReads(const std::vector<RaceStep>& record) {
    size_t stale = 0;
    unsigned int offset = 1;
    for (const RaceStep& r : record) {
        for (size_t t = offset; t < r.read.size(); ++t) stale += !sameValue(r.read[t], r.before[t - offset]);
        offset *= 2;
    }
    return stale;
}

static std::string laneList(const std::vector<unsigned int>& lanes) {
    std::string text;
    for (size_t k = 0; k < lanes.size() && k < 8; ++k) text += (k ? ", " : "") + std::to_string(lanes[k]);
    if (lanes.size() > 8) text += ", ... (" + std::to_string(lanes.size()) + ")";
    return text.empty() ? "-" : text;
}

static std::string valuesText(const std::vector<float>& values) {
    std::string text;
    for (size_t k = 0; k < values.size(); ++k) {
        text += k ? " " : "";
        text += values[k] == values[k] ? std::to_string((long long)values[k]) : "?";
    }
    return text;
}

static int runTrace(const Options& opt, const cudaDeviceProp& prop) {
    const unsigned int lanes = opt.trace_lanes, warp = unsigned(prop.warpSize);
    if (lanes > unsigned(prop.maxThreadsPerBlock)) {
        std::fprintf(stderr, "trace: a block of %u threads exceeds this GPU's %d threads per block\n", lanes,
                     prop.maxThreadsPerBlock);
        return kExitUsage;
    }
    struct Traced {
        const char* name;
        const char* label;
        ScanKernel kernel;
    };
    const Traced kernels[] = {{"in-place", "inclusive, in place", scanInclusiveInPlace},
                              {"no-copy", "inclusive, no copy", scanInclusiveNoCopy},
                              {"double-buffer", "inclusive, double buffered", scanInclusiveDoubleBuffer}};
    std::printf("Trace: %u blocks of %u lanes (%u warp%s of %u), each tile in[i] = (i %% 8) + 1; every lane records\n"
                "what it read from lane tid - offset at each step. STALE: the lane it read had already written its new\n"
                "value. Shown: the block with the most stale reads (the first block when none has any)\n\n",
                traceBlocks(lanes), lanes, (lanes + warp - 1) / warp, lanes > warp ? "s" : "", warp);
    FILE* out = nullptr;
    if (!opt.trace_out.empty()) {
        out = std::fopen(opt.trace_out.c_str(), "w");
        if (out == nullptr) {
            std::fprintf(stderr, "trace: cannot write %s: %s\n", opt.trace_out.c_str(), std::strerror(errno));
            return kExitFail;
        }
        // program| names the lesson: these are scan.cu's kernels (the twin check), so a trace
        // written here reads as the traces written before the twin existed.
        std::fprintf(out, "# scan-lab race trace, format 1: kernel|NAME, then read|, before| and after|STEP|OFFSET|"
                          "one value per lane (? = none)\nprogram|day31-scan/scan.cu\ngpu|%s\nlanes|%u\nwarp|%u\n",
                     prop.name, lanes, warp);
    }
    std::printf("kernel                      step  offset  stale reads  lanes that read stale values              stale words\n");
    size_t stale_total[3] = {0, 0, 0}, stale_blocks[3] = {0, 0, 0}, across_warps = 0;
    unsigned int shown[3] = {0, 0, 0}, launches = 0;
    for (size_t k = 0; k < 3; ++k) {
        std::vector<std::vector<RaceStep>> blocks;
        // The in-place kernel again until a block shows the race; the others once.
        for (unsigned int launch = 0; launch < (k == 0 ? kTraceLaunches : 1u) && stale_blocks[k] == 0; ++launch) {
            blocks = traceKernel(kernels[k].kernel, lanes);
            if (k == 0) launches = launch + 1;
            size_t most = 0;
            for (unsigned int b = 0; b < traceBlocks(lanes); ++b) {
                const size_t stale = staleReads(blocks[b]);
                stale_blocks[k] += stale > 0;
                if (stale > most) {
                    most = stale;
                    shown[k] = b;
                }
            }
        }
        const std::vector<RaceStep>& record = blocks[shown[k]];
        if (out != nullptr) std::fprintf(out, "kernel|%s\nblock|%u\n", kernels[k].name, shown[k]);
        unsigned int offset = 1;
        for (size_t step = 0; step < record.size(); ++step, offset *= 2) {
            const RaceStep& r = record[step];
            std::vector<unsigned int> stale, stale_words;
            for (unsigned int t = 0; t < lanes; ++t) {
                if (t >= offset && !sameValue(r.read[t], r.before[t - offset])) {
                    stale.push_back(t);
                    if (k == 0 && t / warp != (t - offset) / warp) ++across_warps;
                }
                if (t < offset && !sameValue(r.after[t], r.before[t])) stale_words.push_back(t);
            }
            stale_total[k] += stale.size();
            std::printf("%-26s  %4zu  %6u  %11zu  %-40s  %s\n", step == 0 ? kernels[k].label : "", step + 1, offset,
                        stale.size(), laneList(stale).c_str(), laneList(stale_words).c_str());
            if (out != nullptr) {
                std::fprintf(out, "read|%zu|%u|%s\n", step + 1, offset, valuesText(r.read).c_str());
                std::fprintf(out, "before|%zu|%u|%s\n", step + 1, offset, valuesText(r.before).c_str());
                std::fprintf(out, "after|%zu|%u|%s\n", step + 1, offset, valuesText(r.after).c_str());
            }
        }
    }
    if (out != nullptr && std::fclose(out) != 0) {
        std::fprintf(stderr, "trace: writing %s failed\n", opt.trace_out.c_str());
        return kExitFail;
    }
    std::printf("\nblocks with a stale read, of %u: in place %zu (launch %u of at most %u; block %u shown: %zu stale reads,\n"
                "%zu of them from a lane in another warp); no copy %zu; double buffered %zu\n",
                traceBlocks(lanes), stale_blocks[0], launches, kTraceLaunches, shown[0], stale_total[0], across_warps,
                stale_blocks[1], stale_blocks[2]);
    if (stale_blocks[0] == 0 && lanes > warp)
        std::printf("no launch caught the in-place race this time: it is still there (racecheck reports it every time);\n"
                    "a race owes nobody a wrong answer. Try again, or a wider block (--trace-lanes 256)\n");
    if (stale_blocks[2] != 0) {
        std::printf("FAILED: the double-buffered kernel read a stale value\n");
        return kExitFail;
    }
    std::printf("the double-buffered kernel read only the previous step's values%s\n",
                opt.trace_out.empty() ? "" : ("; the whole record is in " + opt.trace_out).c_str());
    return kExitPass;
}

int main(int argc, char** argv) {
    const Options opt = parseOptions(argc, argv);
    const cudaDeviceProp prop = openDevice(reinterpret_cast<const void*>(&scanInclusiveDoubleBuffer));
    std::printf("GPU: %s (compute capability %d.%d), warp size %d\n", prop.name, prop.major, prop.minor, prop.warpSize);
    return runTrace(opt, prop);
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
