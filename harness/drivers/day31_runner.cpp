// Harness-owned GPU runner for the Day 31 exercise (exercises/day31_shift_then_scan.cu).
//
// Host code of the harness only: it loads the DEVICE code the grader compiled
// from a submission (a fatbin: no host code of the submission exists in it),
// launches the two kernels by their mangled names through the CUDA driver API,
// and writes back the raw words it finds in device memory. It judges nothing;
// harness/scanlab/grade_day31.py compares every word with its own reference.
// The grader builds this file with g++ outside the sandbox and runs it inside
// one (harness/scanlab/sandbox.py): one process for all the inputs, and a
// fresh one for the launches left after a CUDA error or a time limit.
//
//   day31_runner --probe --fatbin PROBE.fatbin
//       Is there a usable GPU? cuInit, device 0, its primary context, the
//       harness's own tiny module (drivers/day31_probe.cu) loaded and run.
//       Exit 0 usable; 3 not, with one line saying why. Needs no student code.
//   day31_runner --fatbin MODULE.fatbin --input IN0.f32 [--input IN1.f32 ...]
//                --tasks 0:32:0,0:32:1,... [--guard WORDS] [--launch-limit SECONDS]
//       IN.f32: raw little-endian float32 input (n = size / 4, n >= 1). A task
//       C:BLOCK:K launches kernel K (0 scanExclusiveScanThenShift, 1
//       scanExclusiveShiftThenScan) on input C (the C-th --input, from 0) with
//       BLOCK threads and ceil(n / BLOCK) blocks. Tasks run in the order given.
//       A launch still running after SECONDS (default 2) ends the process.
//
// Files written in the working folder (little-endian; str = u32 length + bytes):
//   module.bin: "D31MOD01", u32 CUresult of loading the module, str error
//     name, str error text; when it loaded: u32 found + i32 value of
//     scanlab_free_total_version, u32 found + u32 length + u32 truncated + the
//     bytes of scanlab_free_total_sentence (day31_exports.cuh puts both there at
//     compile time, and they are read before any kernel runs), u32 count and
//     per kernel in the module: str mangled name, str demangled name.
//   task-C-BLOCK-K.bin: "D31TSK01", u32 block, u32 kernel, u64 n, u64 tiles,
//     u32 guard, u32 state (0 launched and never finished, 1 finished, 2 a CUDA
//     error, 3 no such kernel in the module), u32 CUresult, str error name, str
//     error text, str the step that failed; when finished: float32 out[guard + n
//     + guard], block_totals[guard + tiles + guard], in[guard + n + guard].
//     The "launched" version is written before the launch and replaced (by a
//     rename) when the task ends, so a run killed by its time limit leaves the
//     task it was in marked.
//
// Before every launch the same three buffers (allocated once) are refilled:
// out and block_totals and the guard words around all three with the poison
// 0xFFFFFFFF (a NaN), the input copied in again. No earlier result sits in
// device memory, a kernel that changed the input cannot spoil the next launch,
// and every word written outside out[0, n) and block_totals[0, tiles) shows. Every
// task also gets the module loaded afresh (its __device__ variables back at their
// initialisers), and the first task of the other kernel starts in a new context (the
// device heap and everything else the first kernel could have left are gone): a kernel
// cannot copy what the other one computed. (The grader also orders the tasks so that no
// launch follows one on the same input.)
//
// Exit status: 0 every task done (whatever the results); 1 the runner itself
// failed (a file, an allocation); 2 bad command line; 3 (--probe only) no
// usable GPU; 4 stopped after a CUDA error (a crash poisons the context: the
// grader starts a fresh process for the tasks left) or the module did not load;
// 5 a launch ran past --launch-limit (the task stays marked "launched"; ending
// the process destroys the context, which stops the kernel).

#include <cuda.h>
#include <cxxabi.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kExitDone = 0;
constexpr int kExitRunner = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;
constexpr int kExitStopped = 4;
constexpr int kExitHung = 5;

constexpr uint32_t kPoison = 0xFFFFFFFFu;
constexpr uint32_t kSentenceCapacity = 4096;  // day31_exports.cuh: ScanlabText::bytes
constexpr uint32_t kMostFunctionsListed = 64;
constexpr size_t kMostNameBytes = 400;

// The starter's signatures, (const float*, float*, float*, size_t), as the Itanium C++ ABI mangles them.
constexpr const char* kKernelSymbols[2] = {"_Z26scanExclusiveScanThenShiftPKfPfS1_m",
                                           "_Z26scanExclusiveShiftThenScanPKfPfS1_m"};
constexpr const char* kKernelNames[2] = {"scanExclusiveScanThenShift", "scanExclusiveShiftThenScan"};

enum TaskState : uint32_t { kLaunched = 0, kFinished = 1, kCudaError = 2, kNoSuchKernel = 3 };

std::string errorName(CUresult r) {
    const char* name = nullptr;
    return ::cuGetErrorName(r, &name) == CUDA_SUCCESS && name != nullptr ? name : "CUDA error " + std::to_string(r);
}

std::string errorText(CUresult r) {
    const char* text = nullptr;
    return ::cuGetErrorString(r, &text) == CUDA_SUCCESS && text != nullptr ? text : "unknown error";
}

[[noreturn]] void stop(int status, const std::string& line) {
    std::fprintf(stderr, "day31_runner: %s\n", line.c_str());
    std::exit(status);
}

// A CUDA call the runner itself depends on (not one a kernel can make fail).
void need(CUresult r, const char* what, int status = kExitRunner) {
    if (r != CUDA_SUCCESS) stop(status, std::string(what) + " failed: " + errorName(r) + " (" + errorText(r) + ")");
}

// Binary output, written whole to NAME.tmp and renamed to NAME when closed.
class Writer {
public:
    explicit Writer(std::string path) : path_(std::move(path)), temporary_(path_ + ".tmp") {
        file_ = std::fopen(temporary_.c_str(), "wb");
        if (file_ == nullptr) stop(kExitRunner, "cannot write " + temporary_ + ": " + std::strerror(errno));
    }
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    ~Writer() {
        if (file_ != nullptr) std::fclose(file_);
    }

    void bytes(const void* data, size_t count) {
        if (count > 0 && std::fwrite(data, 1, count, file_) != count) {
            stop(kExitRunner, "writing " + temporary_ + " failed: " + std::strerror(errno));
        }
    }
    void u32(uint32_t v) { bytes(&v, sizeof v); }  // the host is little-endian (x86-64, aarch64)
    void i32(int32_t v) { bytes(&v, sizeof v); }
    void u64(uint64_t v) { bytes(&v, sizeof v); }
    void str(const std::string& s) {
        u32(uint32_t(s.size()));
        bytes(s.data(), s.size());
    }
    void close() {
        const int closed = std::fclose(file_);
        file_ = nullptr;
        if (closed != 0 || std::rename(temporary_.c_str(), path_.c_str()) != 0) {
            stop(kExitRunner, "finishing " + path_ + " failed: " + std::strerror(errno));
        }
    }

private:
    std::string path_;
    std::string temporary_;
    FILE* file_ = nullptr;
};

std::vector<char> readFile(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) stop(kExitRunner, "cannot read " + path + ": " + std::strerror(errno));
    std::vector<char> data;
    char chunk[1 << 16];
    size_t got = 0;
    while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) data.insert(data.end(), chunk, chunk + got);
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed) stop(kExitRunner, "reading " + path + " failed");
    return data;
}

// Device 0 (of those CUDA_VISIBLE_DEVICES leaves) and its primary context, made current.
// Waiting for a kernel blocks instead of spinning, so a hung kernel costs wall time, not CPU time.
CUdevice openDevice(int status) {
    // Load every kernel when the module loads, so a module that cannot load says so there.
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    need(::cuInit(0), "cuInit", status);
    int count = 0;
    need(::cuDeviceGetCount(&count), "cuDeviceGetCount", status);
    if (count == 0) stop(status, "no CUDA device is visible");
    CUdevice device = 0;
    need(::cuDeviceGet(&device, 0), "cuDeviceGet", status);
    ::cuDevicePrimaryCtxSetFlags(device, CU_CTX_SCHED_BLOCKING_SYNC);  // only a preference: ignore a refusal
    CUcontext context = nullptr;
    need(::cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain", status);
    need(::cuCtxSetCurrent(context), "cuCtxSetCurrent", status);
    return device;
}

// A new primary context: the old one's memory, device heap and modules are destroyed with it.
void freshContext(CUdevice device) {
    need(::cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
    need(::cuDevicePrimaryCtxReset(device), "cuDevicePrimaryCtxReset");
    ::cuDevicePrimaryCtxSetFlags(device, CU_CTX_SCHED_BLOCKING_SYNC);
    CUcontext context = nullptr;
    need(::cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    need(::cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

// ---- --probe -----------------------------------------------------------------

int probe(const std::string& fatbin) {
    const CUdevice device = openDevice(kExitNoGpu);
    char name[256] = {};
    ::cuDeviceGetName(name, sizeof name - 1, device);
    int major = 0, minor = 0, driver = 0;
    ::cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    ::cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    ::cuDriverGetVersion(&driver);
    const std::string where = std::string(name) + " (sm_" + std::to_string(major) + std::to_string(minor) +
                              "), driver " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);

    const std::vector<char> image = readFile(fatbin);
    CUmodule module = nullptr;
    const CUresult loaded = ::cuModuleLoadData(&module, image.data());
    if (loaded != CUDA_SUCCESS) {
        stop(kExitNoGpu, "the driver cannot load code built by this nvcc on " + where + ": " + errorName(loaded) +
                             " (" + errorText(loaded) + ")");
    }
    CUfunction kernel = nullptr;
    need(::cuModuleGetFunction(&kernel, module, "scanlab_probe"), "finding the probe kernel", kExitNoGpu);
    CUdeviceptr word = 0;
    need(::cuMemAlloc(&word, sizeof(uint32_t)), "cuMemAlloc", kExitNoGpu);
    need(::cuMemsetD32(word, 0, 1), "cuMemsetD32", kExitNoGpu);
    void* params[] = {&word};
    need(::cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), "launching the probe kernel",
         kExitNoGpu);
    need(::cuCtxSynchronize(), "running the probe kernel", kExitNoGpu);
    uint32_t value = 0;
    need(::cuMemcpyDtoH(&value, word, sizeof value), "copying the probe's word back", kExitNoGpu);
    if (value != 0x5CA1AB1Eu) stop(kExitNoGpu, "the probe kernel ran on " + where + " but did not write its word");
    std::printf("day31_runner: usable GPU: %s\n", where.c_str());
    return kExitDone;
}

// ---- grading -----------------------------------------------------------------

struct Task {
    uint32_t input;
    uint32_t block;
    uint32_t kernel;
};

// "0:32:0,0:32:1,1:64:0" -> tasks; false on anything else (an input past the last --input included).
bool parseTasks(const std::string& text, size_t inputs, std::vector<Task>& tasks) {
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find(',', at);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(at, end - at);
        char* rest = nullptr;
        const unsigned long input = std::strtoul(item.c_str(), &rest, 10);
        if (rest == item.c_str() || *rest != ':' || input >= inputs) return false;
        const char* blockText = rest + 1;
        const unsigned long block = std::strtoul(blockText, &rest, 10);
        if (rest == blockText || *rest != ':' || block < 1 || block > 1024) return false;
        const std::string kernel = rest + 1;
        if (kernel != "0" && kernel != "1") return false;
        tasks.push_back(Task{uint32_t(input), uint32_t(block), uint32_t(kernel[0] - '0')});
        at = end + 1;
    }
    return !tasks.empty();
}

std::string demangle(const char* mangled) {
    int status = 0;
    char* plain = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string result = status == 0 && plain != nullptr ? plain : "";
    std::free(plain);
    return result;
}

std::string clip(std::string s) {
    if (s.size() > kMostNameBytes) s.resize(kMostNameBytes);
    return s;
}

// The answers the exports put in the module, then every kernel it has.
void describeModule(Writer& w, CUmodule module) {
    CUdeviceptr at = 0;
    size_t bytes = 0;
    int32_t version = 0;
    const bool haveVersion = ::cuModuleGetGlobal(&at, &bytes, module, "scanlab_free_total_version") == CUDA_SUCCESS &&
                             bytes == sizeof version && ::cuMemcpyDtoH(&version, at, sizeof version) == CUDA_SUCCESS;
    w.u32(haveVersion ? 1 : 0);
    w.i32(haveVersion ? version : 0);

    // struct ScanlabText { char bytes[kSentenceCapacity]; unsigned length; unsigned truncated; }
    std::vector<char> text(kSentenceCapacity + 2 * sizeof(uint32_t));
    const bool haveSentence = ::cuModuleGetGlobal(&at, &bytes, module, "scanlab_free_total_sentence") == CUDA_SUCCESS &&
                              bytes == text.size() && ::cuMemcpyDtoH(text.data(), at, text.size()) == CUDA_SUCCESS;
    uint32_t length = 0, truncated = 0;
    if (haveSentence) {
        std::memcpy(&length, text.data() + kSentenceCapacity, sizeof length);
        std::memcpy(&truncated, text.data() + kSentenceCapacity + sizeof length, sizeof truncated);
        if (length > kSentenceCapacity) length = kSentenceCapacity;
    }
    w.u32(haveSentence ? 1 : 0);
    w.u32(length);
    w.u32(truncated);
    w.bytes(text.data(), length);

    unsigned int count = 0;
    std::vector<CUfunction> functions;
    if (::cuModuleGetFunctionCount(&count, module) == CUDA_SUCCESS && count > 0) {
        functions.resize(count);
        if (::cuModuleEnumerateFunctions(functions.data(), count, module) != CUDA_SUCCESS) functions.clear();
    }
    if (functions.size() > kMostFunctionsListed) functions.resize(kMostFunctionsListed);
    std::vector<std::string> names;
    for (CUfunction f : functions) {
        const char* name = nullptr;
        if (::cuFuncGetName(&name, f) == CUDA_SUCCESS && name != nullptr) names.push_back(name);
    }
    w.u32(uint32_t(names.size()));
    for (const std::string& name : names) {
        w.str(clip(name));
        w.str(clip(demangle(name.c_str())));
    }
}

// Allocated once for the largest input and the most tiles of any task; each
// launch fills and reads back only the guard + n + guard words its input needs.
struct Buffers {
    size_t mostN = 0;
    size_t guard = 0;
    size_t mostTiles = 0;
    CUdeviceptr in = 0, out = 0, totals = 0;  // each starts `guard` words before the kernel's pointer
    size_t dataWords() const { return guard + mostN + guard; }
    size_t totalsWords() const { return guard + mostTiles + guard; }
};

void taskHeader(Writer& w, const Task& t, size_t n, size_t tiles, size_t guard, TaskState state, CUresult r,
                const std::string& step) {
    w.bytes("D31TSK01", 8);
    w.u32(t.block);
    w.u32(t.kernel);
    w.u64(n);
    w.u64(tiles);
    w.u32(uint32_t(guard));
    w.u32(state);
    w.u32(uint32_t(r));
    w.str(r == CUDA_SUCCESS ? "" : errorName(r));
    w.str(r == CUDA_SUCCESS ? "" : errorText(r));
    w.str(step);
}

std::string taskFile(const Task& t) {
    return "task-" + std::to_string(t.input) + "-" + std::to_string(t.block) + "-" + std::to_string(t.kernel) +
           ".bin";
}

// Waits for the launch like cuCtxSynchronize, but sleeps between polls and gives up after
// `limit` seconds: a kernel that never ends costs the grader the limit, not the run's.
CUresult waitForLaunch(double limit, bool& ranOut) {
    const auto start = std::chrono::steady_clock::now();
    auto pause = std::chrono::microseconds(20);
    for (;;) {
        const CUresult r = ::cuStreamQuery(nullptr);
        if (r != CUDA_ERROR_NOT_READY) return r == CUDA_SUCCESS ? ::cuCtxSynchronize() : r;
        const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
        if (waited.count() > limit) {
            ranOut = true;
            return CUDA_SUCCESS;
        }
        std::this_thread::sleep_for(pause);
        if (pause < std::chrono::milliseconds(2)) pause *= 2;
    }
}

// One launch. False when a CUDA error ended it (the context may be unusable now).
bool runTask(const Task& t, CUfunction kernel, const Buffers& b, const std::vector<float>& input, double limit) {
    const size_t n = input.size();
    const size_t tiles = (n + t.block - 1) / t.block;
    const std::string path = taskFile(t);
    {
        Writer marker(path);
        taskHeader(marker, t, n, tiles, b.guard, kLaunched, CUDA_SUCCESS, "");
        marker.close();
    }
    Writer w(path);
    if (kernel == nullptr) {
        taskHeader(w, t, n, tiles, b.guard, kNoSuchKernel, CUDA_SUCCESS, "");
        w.close();
        return true;
    }
    auto failed = [&](CUresult r, const std::string& step) {
        taskHeader(w, t, n, tiles, b.guard, kCudaError, r, step);
        w.close();
        std::fprintf(stderr, "day31_runner: %s with %u threads: %s: %s\n", kKernelNames[t.kernel], t.block,
                     step.c_str(), errorName(r).c_str());
        return false;
    };

    const size_t guardBytes = b.guard * sizeof(float);
    CUresult r = ::cuMemsetD32(b.in, kPoison, b.dataWords());
    if (r == CUDA_SUCCESS) r = ::cuMemcpyHtoD(b.in + guardBytes, input.data(), n * sizeof(float));
    if (r == CUDA_SUCCESS) r = ::cuMemsetD32(b.out, kPoison, b.dataWords());
    if (r == CUDA_SUCCESS) r = ::cuMemsetD32(b.totals, kPoison, b.totalsWords());
    if (r != CUDA_SUCCESS) return failed(r, "refilling the buffers before the launch");

    CUdeviceptr in = b.in + guardBytes, out = b.out + guardBytes, totals = b.totals + guardBytes;
    uint64_t count = n;  // the kernel's size_t
    void* params[] = {&in, &out, &totals, &count};
    r = ::cuLaunchKernel(kernel, unsigned(tiles), 1, 1, t.block, 1, 1, 0, nullptr, params, nullptr);
    if (r != CUDA_SUCCESS) return failed(r, "launching the kernel");
    bool ranOut = false;
    r = waitForLaunch(limit, ranOut);
    if (ranOut) {
        std::fprintf(stderr, "day31_runner: %s with %u threads ran past the launch limit of %g s\n",
                     kKernelNames[t.kernel], t.block, limit);
        std::fflush(stderr);
        std::_Exit(kExitHung);  // the task file still says "launched"
    }
    if (r != CUDA_SUCCESS) return failed(r, "running the kernel");

    std::vector<float> outWords(b.guard + n + b.guard), totalsWords(b.guard + tiles + b.guard),
        inWords(b.guard + n + b.guard);
    r = ::cuMemcpyDtoH(outWords.data(), b.out, outWords.size() * sizeof(float));
    if (r == CUDA_SUCCESS) r = ::cuMemcpyDtoH(totalsWords.data(), b.totals, totalsWords.size() * sizeof(float));
    if (r == CUDA_SUCCESS) r = ::cuMemcpyDtoH(inWords.data(), b.in, inWords.size() * sizeof(float));
    if (r != CUDA_SUCCESS) return failed(r, "copying the results back");

    taskHeader(w, t, n, tiles, b.guard, kFinished, CUDA_SUCCESS, "");
    w.bytes(outWords.data(), outWords.size() * sizeof(float));
    w.bytes(totalsWords.data(), totalsWords.size() * sizeof(float));
    w.bytes(inWords.data(), inWords.size() * sizeof(float));
    w.close();
    return true;
}

int grade(const std::string& fatbin, const std::vector<std::string>& inputPaths, const std::vector<Task>& tasks,
          size_t guard, double limit) {
    std::vector<std::vector<float>> inputs;
    for (const std::string& path : inputPaths) {
        const std::vector<char> raw = readFile(path);
        if (raw.empty() || raw.size() % sizeof(float) != 0) stop(kExitUsage, path + " is not a non-empty float32 file");
        inputs.emplace_back(raw.size() / sizeof(float));
        std::memcpy(inputs.back().data(), raw.data(), raw.size());
    }
    const std::vector<char> image = readFile(fatbin);

    const CUdevice device = openDevice(kExitRunner);
    CUmodule module = nullptr;
    const CUresult loaded = ::cuModuleLoadData(&module, image.data());
    {
        Writer w("module.bin");
        w.bytes("D31MOD01", 8);
        w.u32(uint32_t(loaded));
        w.str(loaded == CUDA_SUCCESS ? "" : errorName(loaded));
        w.str(loaded == CUDA_SUCCESS ? "" : errorText(loaded));
        if (loaded == CUDA_SUCCESS) describeModule(w, module);
        w.close();
    }
    if (loaded != CUDA_SUCCESS) stop(kExitStopped, "the module did not load: " + errorName(loaded));

    Buffers b;
    b.guard = guard;
    for (const Task& t : tasks) {
        const size_t n = inputs[t.input].size();
        const size_t tiles = (n + t.block - 1) / t.block;
        if (n > b.mostN) b.mostN = n;
        if (tiles > b.mostTiles) b.mostTiles = tiles;
    }
    auto allocate = [&b] {
        need(::cuMemAlloc(&b.in, b.dataWords() * sizeof(float)), "allocating in");
        need(::cuMemAlloc(&b.out, b.dataWords() * sizeof(float)), "allocating out");
        need(::cuMemAlloc(&b.totals, b.totalsWords() * sizeof(float)), "allocating block_totals");
    };
    allocate();

    bool first = true;
    uint32_t previous = tasks.empty() ? 0 : tasks.front().kernel;
    for (const Task& t : tasks) {
        if (!first) {
            need(::cuModuleUnload(module), "cuModuleUnload");
            if (t.kernel != previous) {
                freshContext(device);  // frees the buffers too
                allocate();
            }
            const CUresult again = ::cuModuleLoadData(&module, image.data());
            if (again != CUDA_SUCCESS) stop(kExitStopped, "the module did not load again: " + errorName(again));
        }
        first = false;
        previous = t.kernel;
        CUfunction kernel = nullptr;
        if (::cuModuleGetFunction(&kernel, module, kKernelSymbols[t.kernel]) != CUDA_SUCCESS) {
            kernel = nullptr;  // CUDA_ERROR_NOT_FOUND: reported in the task's file
        }
        if (!runTask(t, kernel, b, inputs[t.input], limit)) return kExitStopped;
    }
    return kExitDone;
}

}  // namespace

int main(int argc, char** argv) {
    std::string fatbin, taskList;
    std::vector<std::string> inputs;
    bool probing = false;
    size_t guard = 1024;
    double limit = 2.0;
    for (int a = 1; a < argc; ++a) {
        const std::string flag = argv[a];
        if (flag == "--probe") {
            probing = true;
            continue;
        }
        if (a + 1 >= argc) stop(kExitUsage, flag + " needs a value");
        const std::string value = argv[++a];
        if (flag == "--fatbin") {
            fatbin = value;
        } else if (flag == "--input") {
            inputs.push_back(value);
        } else if (flag == "--tasks") {
            taskList = value;
        } else if (flag == "--guard") {
            char* rest = nullptr;
            const unsigned long words = std::strtoul(value.c_str(), &rest, 10);
            if (*rest != '\0' || words < 1 || words > (1u << 20)) stop(kExitUsage, "bad --guard " + value);
            guard = words;
        } else if (flag == "--launch-limit") {
            char* rest = nullptr;
            const double seconds = std::strtod(value.c_str(), &rest);
            if (*rest != '\0' || !(seconds > 0 && seconds <= 600)) stop(kExitUsage, "bad --launch-limit " + value);
            limit = seconds;
        } else {
            stop(kExitUsage, "unknown flag " + flag);
        }
    }
    const char* usage = "usage: day31_runner --probe --fatbin PROBE.fatbin | "
                        "day31_runner --fatbin MODULE.fatbin --input IN.f32 [--input ...] --tasks INPUT:BLOCK:K,... "
                        "[--guard WORDS] [--launch-limit SECONDS]";
    if (fatbin.empty()) stop(kExitUsage, usage);
    if (probing) return probe(fatbin);
    std::vector<Task> tasks;
    if (inputs.empty() || !parseTasks(taskList, inputs.size(), tasks)) stop(kExitUsage, usage);
    return grade(fatbin, inputs, tasks, guard, limit);
}
