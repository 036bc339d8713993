// A05 Lab 1's tile kernels again, each copying shared memory out after every step.
//
// Hillis-Steele ping-pong, Hillis-Steele register-staged and Blelloch (padded), as
// scan.cu (beside this file) has them, with trace calls added: every added line ends
// in "// trace", and removed, they leave scan.cu's kernels token for token
// (harness/test_trace.py checks it). scan.cu teaches the kernels; this program watches
// them. One block scans one small tile; after every barrier each thread copies its slot
// of shared memory out as one row of the trace. Nothing here recomputes a step on the
// CPU; the CPU only checks each kernel's last row against its scan.
//
// Build (the Makefile does this: `make cuda` from a05-scan/):
//   nvcc -std=c++17 -O3 -lineinfo -arch=sm_90 -o trace cuda/trace.cu
//
// Run:
//   ./trace                                the page's 3 1 7 0 4 1 6 3 through the three kernels
//   ./trace --trace-input 5,0,2,9,1        another tile, padded with 0 (the identity) to a power of two
//   ./trace --trace-out trace.txt          also the trace, for python3 trace_pictures.py trace.txt
//   ./trace --help                         every flag
//
// Exit status: 0 every traced kernel ended with the CPU's scan; 1 one did not, or a
// CUDA call failed; 2 bad command line; 3 no usable GPU.

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

// A launch reports a bad configuration at once (cudaGetLastError) and a fault in
// the kernel at the next synchronisation. Timed loops check the first after every
// launch and the second once the timing is over.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// ---- GPU kernels -------------------------------------------------------------
//
// One tile per block. Lanes past the end of the array load 0, the identity for +,
// so a partial last tile needs no special case; every bounds check guards data,
// never a barrier, because every thread of a block must reach every __syncthreads().
// Tile sizes are powers of two (the trees below need it). Shared memory is dynamic,
// sized per launch, so each kernel uses exactly what the table in Part 2 reports.

// Shared memory is 32 banks of 4-byte words. Blelloch's tree touches slots a
// power-of-two stride apart; from stride 32 on, every active lane of a warp hits the
// same bank and the accesses serialise. One dead word after every 32 moves logical
// index i to physical i + i/32, so indices 32 apart land 33 apart: adjacent banks.
// This one term is enough for tiles up to 1024 (work out the strides: every level is
// conflict-free). Do not "simplify" it away; do check Nsight Compute's counters.
//
// PITFALL: GPU Gems 3 also prints a two-term version, and many copies spell it
//     ((n) >> LOG_NUM_BANKS + (n) >> (2 * LOG_NUM_BANKS))
// `+` binds tighter than `>>`, so that is n >> (5 + n) >> 10: a shift by 5 + n bits,
// which for any index past 26 is undefined and in practice yields zero padding at
// best. If you ever need the second term, parenthesise every shift:
//     (((n) >> LOG_NUM_BANKS) + ((n) >> (2 * LOG_NUM_BANKS)))
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(i) ((i) >> LOG_NUM_BANKS)

// trace_step copies the block's tile out of shared memory as row `row` of g_trace (each
// thread its own slot), then waits at a barrier, so no thread overwrites a slot before
// every thread has copied it. Every thread calls it at the same points, after a barrier
// of the kernel's own, so the barrier inside is reached by the whole block.
__device__ float* g_trace = nullptr;

__device__ __forceinline__ void trace_step(unsigned int& row, unsigned int tid, float value) {
    g_trace[size_t(row) * blockDim.x + tid] = value;
    __syncthreads();
    ++row;
}

// Hillis-Steele, ping-pong buffers: inclusive scan of each tile of blockDim.x.
// Each step reads one half of shared memory and writes the other, so one barrier a
// step separates every read of a half from the next write to it. Every lane writes
// every step (idle lanes copy their value across), or the destination half would
// still hold a value from two steps ago. Adds: T log2 T - (T - 1). Barriers:
// log2 T + 1. Shared memory: 2T words.
__global__ void hillis_steele_scan_tile_pingpong(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    extern __shared__ float pingpong[];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;
    float* src = pingpong;
    float* dst = pingpong + width;
    unsigned int row = 0;  // trace

    src[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    trace_step(row, tid, src[tid]);  // trace
    for (unsigned int offset = 1; offset < width; offset *= 2) {
        dst[tid] = tid >= offset ? src[tid] + src[tid - offset] : src[tid];
        __syncthreads();
        float* const swap = src;
        src = dst;
        dst = swap;
        trace_step(row, tid, src[tid]);  // trace
    }
    if (i < n) out[i] = src[tid];
}

// Hillis-Steele in place, with the operand staged in a register: inclusive scan of
// each tile of blockDim.x. The first barrier of a step puts every read before any
// write (lane tid reads the slot lane tid - offset is about to overwrite); the
// second puts every write before the next step's reads. Adds: T log2 T - (T - 1).
// Barriers: 2 log2 T + 1. Shared memory: T words, half of ping-pong's.
__global__ void hillis_steele_scan_tile_staged(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    extern __shared__ float staged[];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;
    unsigned int row = 0;  // trace

    staged[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    trace_step(row, tid, staged[tid]);  // trace
    for (unsigned int offset = 1; offset < width; offset *= 2) {
        const float addend = tid >= offset ? staged[tid - offset] : 0.0f;
        __syncthreads();
        if (tid >= offset) staged[tid] += addend;
        __syncthreads();
        trace_step(row, tid, staged[tid]);  // trace
    }
    if (i < n) out[i] = staged[tid];
}

template <bool kPadded>
__device__ __forceinline__ unsigned int smem_index(unsigned int i) {
    return kPadded ? i + CONFLICT_FREE_OFFSET(i) : i;
}

// Blelloch's tree over the blockDim.x values the block has stored at
// temp[smem_index(0 .. blockDim.x - 1)]; leaves there their exclusive scan and
// returns the block's total to thread 0 (the other threads get 0). Opens with a
// barrier, so the caller only stores and calls, and closes with one, so afterwards
// any thread may read any slot. Adds: 2(T - 1). Barriers: 2 log2 T + 2.
template <bool kPadded>
__device__ float blelloch_block_scan(float* temp, unsigned int tid, unsigned int width) {
    // Up-sweep (a reduction). After the level at `offset`, slot offset*(2j + 2) - 1
    // holds the sum of the 2 * offset values ending there; the root holds the total.
    unsigned int offset = 1;
    unsigned int row = 0;  // trace
    for (unsigned int active = width / 2; active > 0; active /= 2) {
        __syncthreads();
        trace_step(row, tid, temp[smem_index<kPadded>(tid)]);  // trace
        if (tid < active) {
            const unsigned int ai = smem_index<kPadded>(offset * (2 * tid + 1) - 1);
            const unsigned int bi = smem_index<kPadded>(offset * (2 * tid + 2) - 1);
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    __syncthreads();
    trace_step(row, tid, temp[smem_index<kPadded>(tid)]);  // trace

    // The identity at the root says "nothing comes before this tile". That one
    // store is what makes the result exclusive; without it every output would be
    // off by the tile's total.
    float total = 0.0f;
    if (tid == 0) {
        const unsigned int root = smem_index<kPadded>(width - 1);
        total = temp[root];
        temp[root] = 0.0f;
    }

    // Down-sweep. Invariant: a node holds the sum of everything to the left of its
    // subtree. The left child inherits the node's value; the right child gets the
    // node's value plus the left subtree's sum, which the left child held until now.
    for (unsigned int active = 1; active < width; active *= 2) {
        offset /= 2;
        __syncthreads();
        trace_step(row, tid, temp[smem_index<kPadded>(tid)]);  // trace
        if (tid < active) {
            const unsigned int ai = smem_index<kPadded>(offset * (2 * tid + 1) - 1);
            const unsigned int bi = smem_index<kPadded>(offset * (2 * tid + 2) - 1);
            const float left = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += left;
        }
    }
    __syncthreads();
    trace_step(row, tid, temp[smem_index<kPadded>(tid)]);  // trace
    return total;
}

// Blelloch exclusive scan of each tile of blockDim.x elements, one per thread: the
// lesson's kernel, the one Parts 1 and 2 run (and trace.cu traces). Each thread stores its
// element (lanes past the end store 0, the identity), the block runs the tree, and
// each thread takes its slot back. Shared memory: blockDim.x words, plus one per 32
// when padded.
template <bool kPadded>
__global__ void blelloch_scan_tile(const float* __restrict__ in, float* __restrict__ out,
                                   float* __restrict__ tile_sums, size_t n) {
    extern __shared__ float temp[];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;

    temp[smem_index<kPadded>(tid)] = i < n ? in[i] : 0.0f;
    const float total = blelloch_block_scan<kPadded>(temp, tid, blockDim.x);  // opens and closes with a barrier
    if (i < n) out[i] = temp[smem_index<kPadded>(tid)];
    if (tid == 0 && tile_sums != nullptr) tile_sums[blockIdx.x] = total;  // what the exclusive scan drops
}

// ---- host side -----------------------------------------------------------------

constexpr unsigned int kMaxTraceWidth = 64;  // a tile small enough to read
constexpr unsigned long long kMaxTraceValue = 1000;

constexpr unsigned int log2u(unsigned int x) {
    unsigned int steps = 0;
    while ((1u << steps) < x) ++steps;
    return steps;
}

static size_t blellochSmemBytes(unsigned int threads, bool padded) {
    return (threads + (padded ? CONFLICT_FREE_OFFSET(threads) : 0)) * sizeof(float);
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
    std::vector<unsigned int> trace_input;  // --trace-input (default: the page's 3 1 7 0 4 1 6 3)
    std::string trace_out;                  // --trace-out FILE: the trace in the picture script's format
};

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: trace [--trace-input LIST] [--trace-out FILE] [--help]\n"
                 "\n"
                 "One small tile through scan.cu's three tile kernels, printing shared memory after every\n"
                 "step, as each kernel copies it out.\n"
                 "\n"
                 "  --trace-input L the tile: up to %u whole numbers 0..%llu, comma separated\n"
                 "                 (default the page's 3,1,7,0,4,1,6,3); padded with 0 to a power of two\n"
                 "  --trace-out F  also write the trace to F for a05-scan/trace_pictures.py\n"
                 "  --help         this text\n"
                 "\n"
                 "exit status: 0 every traced kernel ended with the CPU's scan, 1 one did not or a CUDA\n"
                 "call failed, 2 bad command line, 3 no usable GPU\n",
                 kMaxTraceWidth, kMaxTraceValue);
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
        } else if (flag == "--trace-input") {
            const std::string v = needValue();
            opt.trace_input.clear();
            size_t start = 0;
            while (true) {
                const size_t comma = v.find(',', start);
                const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
                unsigned long long x = 0;
                if (!parseUnsigned(item.c_str(), kMaxTraceValue, x) || opt.trace_input.size() == kMaxTraceWidth) {
                    usageError("--trace-input wants 1 to 64 whole numbers 0..1000, comma separated, not '%s'", v.c_str());
                }
                opt.trace_input.push_back(unsigned(x));
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        } else if (flag == "--trace-out") {
            opt.trace_out = needValue();
            if (opt.trace_out.empty()) usageError("%s needs a file name", "--trace-out");
        } else {
            usageError("unknown argument '%s'", argv[a]);
        }
    }
    return opt;
}

// ---- host side: the trace -----------------------------------------------------
//
// One block, one tile of up to 64 elements, through the three tile kernels with
// g_trace pointing at a buffer: every trace_step call in the kernels copies the
// tile out of shared memory as one row. Nothing here recomputes a step on the CPU;
// the CPU only checks each kernel's last row against its reference.

struct TracedKernel {
    const char* name;   // in --trace-out
    const char* title;  // on screen
    std::vector<std::string> labels;
};

static std::vector<float> traceRows(int kernel, const std::vector<float>& tile) {
    const unsigned int width = unsigned(tile.size());
    const size_t rows = 2 * log2u(width) + 2;  // the most any of the three takes (Blelloch)
    float *d_in = nullptr, *d_out = nullptr, *d_trace = nullptr;
    CUDA_CHECK(cudaMalloc(&d_in, width * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, width * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_trace, rows * width * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_in, tile.data(), width * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_trace, 0xFF, rows * width * sizeof(float)));  // NaN: a row no kernel wrote
    CUDA_CHECK(cudaMemcpyToSymbol(g_trace, &d_trace, sizeof d_trace));
    if (kernel == 0) hillis_steele_scan_tile_pingpong<<<1, width, 2 * width * sizeof(float)>>>(d_in, d_out, width);
    if (kernel == 1) hillis_steele_scan_tile_staged<<<1, width, width * sizeof(float)>>>(d_in, d_out, width);
    if (kernel == 2) blelloch_scan_tile<true><<<1, width, blellochSmemBytes(width, true)>>>(d_in, d_out, nullptr, width);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> trace(rows * width);
    CUDA_CHECK(cudaMemcpy(trace.data(), d_trace, trace.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_trace));
    return trace;
}

static int runTrace(const Options& opt, const char* gpu) {
    std::vector<unsigned int> values = opt.trace_input;
    if (values.empty()) values = {3, 1, 7, 0, 4, 1, 6, 3};  // the page's example
    unsigned int width = 2;
    while (width < values.size()) width *= 2;
    std::vector<float> tile(width, 0.0f);
    for (size_t k = 0; k < values.size(); ++k) tile[k] = float(values[k]);

    std::vector<TracedKernel> kernels = {{"hillis-steele-pingpong", "Hillis-Steele, ping-pong buffers", {"in"}},
                                         {"hillis-steele-staged", "Hillis-Steele, in place, register-staged", {"in"}},
                                         {"blelloch", "Blelloch (padded)", {"leaves"}}};
    for (unsigned int offset = 1; offset < width; offset *= 2) {
        kernels[0].labels.push_back("offset " + num(offset));
        kernels[1].labels.push_back("offset " + num(offset));
        kernels[2].labels.push_back("up, stride " + num(offset));
    }
    kernels[2].labels.push_back("root := 0");
    for (unsigned int offset = width / 2; offset >= 1; offset /= 2) kernels[2].labels.push_back("down, stride " + num(offset));

    std::vector<float> inclusive(width), exclusive(width);
    float running = 0.0f;
    for (unsigned int k = 0; k < width; ++k) {
        exclusive[k] = running;
        running += tile[k];
        inclusive[k] = running;
    }

    std::printf("Trace: one tile of %u, %s; shared memory after every step, copied out by the kernels\n", width,
                values.size() == width ? "as given" : ("the " + num(values.size()) + " values given, then 0s (the identity)").c_str());
    FILE* out = nullptr;
    if (!opt.trace_out.empty()) {
        out = std::fopen(opt.trace_out.c_str(), "w");
        if (out == nullptr) {
            std::fprintf(stderr, "trace: cannot write %s: %s\n", opt.trace_out.c_str(), std::strerror(errno));
            return kExitFail;
        }
        std::fprintf(out, "# scan-lab trace, format 1: kernel|NAME, then row|LABEL|VALUES for each step\n");
        // program| names the lesson: these are scan.cu's kernels (the twin check), so a trace
        // written here reads as the traces written before the twin existed.
        std::fprintf(out, "program|a05-scan/cuda/scan.cu\ngpu|%s\n", gpu);
    }
    int failed = 0;
    for (size_t k = 0; k < kernels.size(); ++k) {
        const std::vector<float> trace = traceRows(int(k), tile);
        const TracedKernel& kernel = kernels[k];
        std::printf("\n%s\n", kernel.title);
        if (out != nullptr) std::fprintf(out, "kernel|%s\n", kernel.name);
        for (size_t r = 0; r < kernel.labels.size(); ++r) {
            std::string line = "  " + kernel.labels[r] + std::string(16 - std::min<size_t>(15, kernel.labels[r].size()), ' ');
            std::string words;
            for (unsigned int t = 0; t < width; ++t) {
                const float v = trace[r * width + t];
                words += (t ? " " : "") + (v == v ? num((unsigned long long)v) : std::string("?"));
                line += v == v ? fmt("%5.0f", double(v)) : std::string("    ?");
            }
            std::printf("%s\n", line.c_str());
            if (out != nullptr) std::fprintf(out, "row|%s|%s\n", kernel.labels[r].c_str(), words.c_str());
        }
        const std::vector<float>& expected = k == 2 ? exclusive : inclusive;
        const size_t last = kernel.labels.size() - 1;
        bool right = true;
        for (unsigned int t = 0; t < width; ++t) right = right && trace[last * width + t] == expected[t];
        std::printf("  -> %s\n", right ? (k == 2 ? "the exclusive scan, as the CPU computes it" : "the inclusive scan, as the CPU computes it")
                                       : "WRONG: the last row is not the CPU's scan");
        failed += right ? 0 : 1;
    }
    if (out != nullptr && std::fclose(out) != 0) {
        std::fprintf(stderr, "trace: writing %s failed\n", opt.trace_out.c_str());
        return kExitFail;
    }
    if (failed > 0) {
        std::printf("\nFAILED: %d of 3 traced kernels did not end with the CPU's scan\n", failed);
        return kExitFail;
    }
    std::printf("\nall 3 traced kernels ended with the CPU's scan%s\n",
                opt.trace_out.empty() ? "" : ("; the trace is in " + opt.trace_out).c_str());
    return kExitPass;
}

// ---- main --------------------------------------------------------------------

int main(int argc, char** argv) {
    const Options opt = parseOptions(argc, argv);
    const cudaDeviceProp prop = openDevice(reinterpret_cast<const void*>(&blelloch_scan_tile<true>));
    std::printf("GPU: %s (compute capability %d.%d)\n", prop.name, prop.major, prop.minor);
    return runTrace(opt, prop.name);
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
