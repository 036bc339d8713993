// Harness-owned checker for the Day 31 exercise (exercises/day31_shift_then_scan.cu).
//
// The grader copies a submission to <workdir>/submission.cu and builds this
// file with `-include <workdir>/submission.cu`, so the submission's kernels and
// answers come first and this file uses them. This program only runs the submission's kernels on
// an input the grader wrote and dumps the raw results; the grader computes the
// reference and decides. Nothing here compares anything.
//
//   day31_checker --input IN.f32 --output OUT.bin [--block 32,64,256,1024]
//
// IN.f32: raw little-endian float32 values (n = file size / 4).
// OUT.bin: "DAY31X01", i32 answer (kFreeTotalVersion), u32 sentence length,
// the sentence bytes, u64 n, u32 block count, then per block size: u32 block,
// u64 tiles, out[n] and totals[tiles] of scanExclusiveScanThenShift, then the
// same two arrays of scanExclusiveShiftThenScan. Outputs start as NaN, so
// anything a kernel never writes reads back as NaN.
//
// Exit status: 0 ran (whatever the results); 1 a CUDA call or kernel failed,
// or a file could not be read or written; 2 bad command line; 3 no usable GPU.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// Provided by the submission (force-included ahead of this file):
//   scanExclusiveScanThenShift, scanExclusiveShiftThenScan, kFreeTotalVersion, kFreeTotalSentence

namespace {

constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;

#define CHECKER_CUDA(call, what)                                                                      \
    do {                                                                                              \
        const cudaError_t err_ = (call);                                                              \
        if (err_ != cudaSuccess) {                                                                    \
            std::fprintf(stderr, "day31_checker: %s failed: %s (%s)\n", what, cudaGetErrorName(err_), \
                         cudaGetErrorString(err_));                                                   \
            std::exit(kExitFail);                                                                     \
        }                                                                                             \
    } while (0)

using StudentKernel = void (*)(const float*, float*, float*, size_t);

void noGpu(const char* why, cudaError_t err) {
    std::fprintf(stderr, "day31_checker: no usable GPU: %s (%s)\n", why, cudaGetErrorName(err));
    std::exit(kExitNoGpu);
}

void openDevice() {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) noGpu("no CUDA device found", cudaErrorNoDevice);
    if (err == cudaErrorInsufficientDriver) noGpu("the CUDA driver is missing or older than this program's runtime", err);
    if (err != cudaSuccess) noGpu("the CUDA runtime could not start", err);
    CHECKER_CUDA(cudaSetDevice(0), "cudaSetDevice");
    cudaFuncAttributes attr{};
    const cudaError_t image = cudaFuncGetAttributes(&attr, scanExclusiveShiftThenScan);
    if (image != cudaSuccess) noGpu("no code for this GPU in the checker binary", image);
}

void put(FILE* f, const void* data, size_t bytes) {
    if (bytes > 0 && std::fwrite(data, 1, bytes, f) != bytes) {
        std::fprintf(stderr, "day31_checker: writing the output file failed\n");
        std::exit(kExitFail);
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string input, output;
    std::vector<unsigned int> blocks{32, 64, 256, 1024};
    for (int a = 1; a < argc; ++a) {
        const std::string flag = argv[a];
        if (a + 1 >= argc) {
            std::fprintf(stderr, "day31_checker: %s needs a value\n", flag.c_str());
            return kExitUsage;
        }
        const std::string value = argv[++a];
        if (flag == "--input") {
            input = value;
        } else if (flag == "--output") {
            output = value;
        } else if (flag == "--block") {
            blocks.clear();
            size_t start = 0;
            while (start <= value.size()) {
                const size_t comma = value.find(',', start);
                const std::string part = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
                const long b = std::strtol(part.c_str(), nullptr, 10);
                if (b < 1 || b > 1024) {
                    std::fprintf(stderr, "day31_checker: bad block size '%s'\n", part.c_str());
                    return kExitUsage;
                }
                blocks.push_back(unsigned(b));
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        } else {
            std::fprintf(stderr, "day31_checker: unknown flag %s\n", flag.c_str());
            return kExitUsage;
        }
    }
    if (input.empty() || output.empty()) {
        std::fprintf(stderr, "usage: day31_checker --input IN.f32 --output OUT.bin [--block 32,64,...]\n");
        return kExitUsage;
    }

    FILE* in_file = std::fopen(input.c_str(), "rb");
    if (in_file == nullptr) {
        std::fprintf(stderr, "day31_checker: cannot read %s\n", input.c_str());
        return kExitFail;
    }
    std::vector<float> h_in;
    float chunk[4096];
    size_t got = 0;
    while ((got = std::fread(chunk, sizeof(float), 4096, in_file)) > 0) h_in.insert(h_in.end(), chunk, chunk + got);
    std::fclose(in_file);
    const size_t n = h_in.size();

    openDevice();

    const size_t bytes = n * sizeof(float);
    size_t most_tiles = 0;
    for (unsigned int b : blocks) most_tiles = std::max(most_tiles, (n + b - 1) / b);
    float *d_in = nullptr, *d_out = nullptr, *d_totals = nullptr;
    CHECKER_CUDA(cudaMalloc(&d_in, bytes > 0 ? bytes : 4), "cudaMalloc(in)");
    CHECKER_CUDA(cudaMalloc(&d_out, bytes > 0 ? bytes : 4), "cudaMalloc(out)");
    CHECKER_CUDA(cudaMalloc(&d_totals, most_tiles > 0 ? most_tiles * sizeof(float) : 4), "cudaMalloc(totals)");
    if (bytes > 0) CHECKER_CUDA(cudaMemcpy(d_in, h_in.data(), bytes, cudaMemcpyHostToDevice), "copying the input");

    FILE* out = std::fopen(output.c_str(), "wb");
    if (out == nullptr) {
        std::fprintf(stderr, "day31_checker: cannot write %s\n", output.c_str());
        return kExitFail;
    }
    const int32_t answer = int32_t(kFreeTotalVersion);
    const std::string sentence = kFreeTotalSentence != nullptr ? kFreeTotalSentence : "";
    const uint32_t sentence_len = uint32_t(sentence.size());
    const uint64_t n64 = n;
    const uint32_t block_count = uint32_t(blocks.size());
    put(out, "DAY31X01", 8);
    put(out, &answer, sizeof answer);
    put(out, &sentence_len, sizeof sentence_len);
    put(out, sentence.data(), sentence.size());
    put(out, &n64, sizeof n64);
    put(out, &block_count, sizeof block_count);

    const StudentKernel kernels[2] = {scanExclusiveScanThenShift, scanExclusiveShiftThenScan};
    const char* names[2] = {"scanExclusiveScanThenShift", "scanExclusiveShiftThenScan"};
    std::vector<float> h_out(n), h_totals;
    for (unsigned int block : blocks) {
        const uint64_t tiles = (n + block - 1) / block;
        const uint32_t b32 = block;
        put(out, &b32, sizeof b32);
        put(out, &tiles, sizeof tiles);
        h_totals.assign(tiles, 0.0f);
        for (int k = 0; k < 2; ++k) {
            if (n > 0) {
                CHECKER_CUDA(cudaMemset(d_out, 0xFF, bytes), "poisoning out");
                CHECKER_CUDA(cudaMemset(d_totals, 0xFF, tiles * sizeof(float)), "poisoning block_totals");
                kernels[k]<<<unsigned(tiles), block>>>(d_in, d_out, d_totals, n);
                char what[96];
                std::snprintf(what, sizeof what, "launching %s with %u threads", names[k], block);
                CHECKER_CUDA(cudaGetLastError(), what);
                std::snprintf(what, sizeof what, "running %s with %u threads", names[k], block);
                CHECKER_CUDA(cudaDeviceSynchronize(), what);
                CHECKER_CUDA(cudaMemcpy(h_out.data(), d_out, bytes, cudaMemcpyDeviceToHost), "copying out back");
                CHECKER_CUDA(cudaMemcpy(h_totals.data(), d_totals, tiles * sizeof(float), cudaMemcpyDeviceToHost),
                             "copying block_totals back");
            }
            put(out, h_out.data(), bytes);
            put(out, h_totals.data(), tiles * sizeof(float));
        }
    }
    if (std::fclose(out) != 0) {
        std::fprintf(stderr, "day31_checker: closing %s failed\n", output.c_str());
        return kExitFail;
    }
    CHECKER_CUDA(cudaFree(d_in), "cudaFree");
    CHECKER_CUDA(cudaFree(d_out), "cudaFree");
    CHECKER_CUDA(cudaFree(d_totals), "cudaFree");
    return 0;
}
