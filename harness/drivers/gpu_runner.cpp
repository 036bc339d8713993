// Harness-owned GPU runner: every graded GPU exercise's kernels run through it (Day 31,
// exercises/day31_shift_then_scan.cu, and the stretch drills, exercises/04_*, 05_*, 06_*).
//
// Host code of the harness only. It loads the DEVICE code the grader compiled from
// a submission (a fatbin: no host code of the submission exists in it), and follows
// a plan the grader wrote: per task, allocate and fill buffers, launch kernels by
// their mangled names, and copy the buffers back as raw bytes. It judges nothing;
// harness/scanlab/gpu_plan.py writes the plan and reads what this leaves.
//
//   gpu_runner --plan PLAN [--tasks I,J,...] [--launch-limit SECONDS]
//   gpu_runner --probe PROBE.fatbin
//       Is there a usable GPU? cuInit, device 0, its primary context, the harness's
//       own tiny module (drivers/day31_probe.cu) loaded and its scanlab_probe kernel
//       run. Exit 0 usable; 3 not, with one line saying why. Needs no student code.
//
// PLAN is text, one directive a line ('#' starts a comment):
//   module FILE                         the fatbin (once, first)
//   global NAME BYTES                   before the first task: read the __device__ variable
//                                       NAME (exactly BYTES long) once the module has loaded,
//                                       before any kernel runs (Day 31's compile-time answers)
//   library FILE                        before the first task: the harness's timing library
//                                       (drivers/timing_lib.cu: CUB and the harness's kernels),
//                                       loaded by dlopen for the first timed task
//   task                                starts a task (numbered from 0 in plan order)
//   timed                               starts a timed task: its buffers (zero or poison), one
//                                       launch, and a `time` line instead of `dump` (see
//                                       "timed tasks" below for what a repetition does)
//   time IN OUT SEED HIGH exclusive|inclusive WARMUP LEAST MOST SPREAD
//                                       IN refilled every repetition (words 0..HIGH from SEED and
//                                       the repetition), OUT hashed; CUB's exclusive or inclusive
//                                       int32 sum of IN the reference; WARMUP repetitions, then
//                                       LEAST to MOST measured until the spread is at most SPREAD
//   buffer NAME TYPE COUNT GUARD INIT   a device buffer of GUARD + COUNT + GUARD words of
//                                       TYPE (u8 i32 u32 f32 i64 u64 f64); the guard words
//                                       and, for INIT = poison, the COUNT words are all ones
//                                       bits (a NaN for floats); INIT = zero, or file:PATH
//                                       (exactly COUNT words, raw little-endian)
//   launch KERNEL GRID BLOCK SHARED ARG...
//                                       cuLaunchKernel(KERNEL, GRID blocks, BLOCK threads,
//                                       SHARED dynamic bytes); ARG is @NAME (the device
//                                       address of NAME's first word after its guard) or
//                                       TYPE:VALUE (u32 i32 u64 i64 f32)
//   dump NAME...                        after the task's last launch, copy these back
//   end                                 ends the task
// Buffers belong to their task: allocated, filled and freed there, so no task sees
// what an earlier one left in device memory (a kernel that changed its input cannot
// spoil the next task's). Each task also gets the module loaded afresh (its __device__
// variables back at their initialisers), and a task whose first kernel differs from
// the previous task's starts in a new context (the device heap and everything else an
// earlier kernel could have left are gone): no graded kernel can hand its results to
// another. (Day 31's grader also orders its tasks so that no launch follows one on the
// same input.)
//
// Files written in the working folder (little-endian; str = u32 length + bytes):
//   module.bin: "GPRMOD02", u32 CUresult of loading the module, str error name, str
//     error text; when it loaded: u32 count and per kernel: str mangled, str demangled;
//     then u32 count and per `global` of the plan: str name, u32 found (it exists, has
//     exactly BYTES and was copied back), u64 byte count, the bytes (when found).
//   task-I.bin: "GPRTSK01", u32 state (0 started and never finished, 1 finished,
//     2 a CUDA error, 3 a kernel missing from the module, 4 the runner's own part of a timed
//     task failed: its library or CUB; the step says how), u32 the launch it reached
//     (its index in the task; the "started" file is rewritten before each launch, so
//     it names the launch a killed process was in), u32 CUresult, str error name, str error text, str the
//     step that failed; when finished, per dumped buffer: u64 byte count, the bytes
//     (guards included); a timed task's one dump is its timing record instead (below). The
//     "started" version is written first and replaced (by a rename) when the task ends,
//     so a process killed inside a task leaves it marked (a timed task's "reached" is
//     the repetition).
//
// Exit status: 0 every task done (whatever the results); 1 the runner itself failed;
// 2 a bad command line or plan; 3 (--probe only) no usable GPU; 4 stopped after a
// CUDA error (the context may be spoiled: the grader starts a fresh process for the
// tasks left) or the module did not load; 5 a launch ran past --launch-limit (its
// task stays "started"; ending the process destroys the context, which stops the
// kernel).

#include <cuda.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
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
constexpr size_t kMostNameBytes = 400;
constexpr uint32_t kMostKernelsListed = 64;
constexpr uint64_t kMostBufferBytes = 8ull << 30;
constexpr uint64_t kMostGlobalBytes = 1u << 20;

enum TaskState : uint32_t { kStarted = 0, kFinished = 1, kCudaError = 2, kNoSuchKernel = 3, kHarness = 4 };

[[noreturn]] void stop(int status, const std::string& line) {
    std::fprintf(stderr, "gpu_runner: %s\n", line.c_str());
    std::exit(status);
}

std::string errorName(CUresult r) {
    const char* name = nullptr;
    return ::cuGetErrorName(r, &name) == CUDA_SUCCESS && name != nullptr ? name : "CUDA error " + std::to_string(r);
}

std::string errorText(CUresult r) {
    const char* text = nullptr;
    return ::cuGetErrorString(r, &text) == CUDA_SUCCESS && text != nullptr ? text : "unknown error";
}

// A CUDA call the runner itself depends on (not one a kernel can make fail).
void need(CUresult r, const std::string& what, int status = kExitRunner) {
    if (r != CUDA_SUCCESS) stop(status, what + " failed: " + errorName(r) + " (" + errorText(r) + ")");
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
    void u32(uint32_t v) { bytes(&v, sizeof v); }
    void u64(uint64_t v) { bytes(&v, sizeof v); }
    void f64(double v) { bytes(&v, sizeof v); }
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

// The C++ name of a kernel; an extern "C" kernel's name is not mangled and stays as it is.
std::string demangle(const char* mangled) {
    int status = 0;
    char* plain = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string result = status == 0 && plain != nullptr ? plain : mangled;
    std::free(plain);
    if (result.size() > kMostNameBytes) result.resize(kMostNameBytes);
    return result;
}

// ---- the plan --------------------------------------------------------------------

size_t typeBytes(const std::string& type) {
    if (type == "u8") return 1;
    if (type == "i32" || type == "u32" || type == "f32") return 4;
    if (type == "i64" || type == "u64" || type == "f64") return 8;
    return 0;
}

struct BufferSpec {
    std::string name;
    size_t width = 0;  // bytes a word
    uint64_t count = 0;
    uint64_t guard = 0;
    std::string init;  // zero | poison | file:PATH
    uint64_t words() const { return guard + count + guard; }
};

struct Arg {
    std::string buffer;  // non-empty: @buffer
    std::vector<unsigned char> value;
};

struct Launch {
    std::string kernel;
    unsigned grid = 0, block = 0, shared = 0;
    std::vector<Arg> args;
};

// A timed task's `time` line: what the runner does around its one launch, every repetition.
struct Timing {
    std::string input, output;  // the buffers refilled (fresh words) and hashed
    uint64_t seed = 0;
    uint32_t high = 0;       // input words are 0..high
    bool inclusive = false;  // CUB's reference: an inclusive or an exclusive sum
    uint32_t warmup = 0, least = 0, most = 0;
    double spread = 0;  // stop once MAD / median of the submission's and CUB's times are both at most this
};

struct Task {
    std::vector<BufferSpec> buffers;
    std::vector<Launch> launches;
    std::vector<std::string> dumps;
    bool timed = false;
    Timing timing;
};

struct Global {
    std::string name;
    uint64_t bytes = 0;
};

struct Plan {
    std::string module;
    std::string library;  // the harness's timing library (timed tasks only)
    std::vector<Global> globals;
    std::vector<Task> tasks;
};

[[noreturn]] void badPlan(size_t line, const std::string& why) {
    stop(kExitUsage, "plan line " + std::to_string(line) + ": " + why);
}

uint64_t number(const std::string& text, size_t line, uint64_t most) {
    char* rest = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), &rest, 10);
    if (text.empty() || *rest != '\0' || errno != 0 || text[0] == '-' || v > most) {
        badPlan(line, "not a whole number up to " + std::to_string(most) + ": " + text);
    }
    return v;
}

Arg scalar(const std::string& word, size_t line) {
    const size_t colon = word.find(':');
    if (colon == std::string::npos) badPlan(line, "an argument is @BUFFER or TYPE:VALUE, not " + word);
    const std::string type = word.substr(0, colon), text = word.substr(colon + 1);
    Arg arg;
    auto put = [&arg](const void* p, size_t n) {
        const auto* b = static_cast<const unsigned char*>(p);
        arg.value.assign(b, b + n);
    };
    char* rest = nullptr;
    errno = 0;
    if (type == "u32" || type == "u64") {
        const unsigned long long v = std::strtoull(text.c_str(), &rest, 10);
        if (text.empty() || text[0] == '-' || *rest != '\0' || errno != 0 ||
            (type == "u32" && v > 0xFFFFFFFFull)) {
            badPlan(line, "bad " + type + " " + text);
        }
        if (type == "u32") {
            const uint32_t x = uint32_t(v);
            put(&x, sizeof x);
        } else {
            const uint64_t x = v;
            put(&x, sizeof x);
        }
    } else if (type == "i32" || type == "i64") {
        const long long v = std::strtoll(text.c_str(), &rest, 10);
        if (text.empty() || *rest != '\0' || errno != 0 || (type == "i32" && (v < INT32_MIN || v > INT32_MAX))) {
            badPlan(line, "bad " + type + " " + text);
        }
        if (type == "i32") {
            const int32_t x = int32_t(v);
            put(&x, sizeof x);
        } else {
            const int64_t x = v;
            put(&x, sizeof x);
        }
    } else if (type == "f32") {
        const float x = std::strtof(text.c_str(), &rest);
        if (text.empty() || *rest != '\0') badPlan(line, "bad f32 " + text);
        put(&x, sizeof x);
    } else {
        badPlan(line, "unknown argument type " + type);
    }
    return arg;
}

Plan readPlan(const std::string& path) {
    const std::vector<char> raw = readFile(path);
    std::istringstream in(std::string(raw.begin(), raw.end()));
    Plan plan;
    Task* task = nullptr;
    std::string text;
    size_t line = 0;
    while (std::getline(in, text)) {
        ++line;
        const size_t hash = text.find('#');
        if (hash != std::string::npos) text.resize(hash);
        std::istringstream words(text);
        std::vector<std::string> w;
        for (std::string word; words >> word;) w.push_back(word);
        if (w.empty()) continue;
        const std::string& what = w[0];
        if (what == "module") {
            if (w.size() != 2 || !plan.module.empty() || task != nullptr) badPlan(line, "module FILE, once, first");
            plan.module = w[1];
        } else if (what == "global") {
            if (w.size() != 3 || plan.module.empty() || task != nullptr || !plan.tasks.empty()) {
                badPlan(line, "global NAME BYTES, after the module and before the first task");
            }
            const uint64_t bytes = number(w[2], line, kMostGlobalBytes);
            if (bytes == 0) badPlan(line, "a global of 0 bytes");
            plan.globals.push_back(Global{w[1], bytes});
        } else if (what == "library") {
            if (w.size() != 2 || plan.module.empty() || task != nullptr || !plan.tasks.empty()) {
                badPlan(line, "library FILE, after the module and before the first task");
            }
            plan.library = w[1];
        } else if (what == "task" || what == "timed") {
            if (w.size() != 1 || task != nullptr) badPlan(line, what + " takes no words, and tasks do not nest");
            if (what == "timed" && plan.library.empty()) badPlan(line, "a timed task needs the plan's library");
            plan.tasks.emplace_back();
            task = &plan.tasks.back();
            task->timed = what == "timed";
        } else if (what == "end") {
            if (w.size() != 1 || task == nullptr) badPlan(line, "end without a task");
            if (task->launches.empty()) badPlan(line, "a task without a launch");
            if (task->timed && (task->launches.size() != 1 || task->timing.output.empty())) {
                badPlan(line, "a timed task has exactly one launch and a time line");
            }
            task = nullptr;
        } else if (task == nullptr) {
            badPlan(line, what + " outside a task");
        } else if (what == "buffer") {
            if (w.size() != 6) badPlan(line, "buffer NAME TYPE COUNT GUARD INIT");
            BufferSpec b;
            b.name = w[1];
            b.width = typeBytes(w[2]);
            if (b.width == 0) badPlan(line, "unknown type " + w[2]);
            b.count = number(w[3], line, kMostBufferBytes);
            b.guard = number(w[4], line, 1u << 20);
            b.init = w[5];
            if (b.words() * b.width > kMostBufferBytes) badPlan(line, "buffer " + b.name + " is too large");
            if (b.init != "zero" && b.init != "poison" && b.init.rfind("file:", 0) != 0) {
                badPlan(line, "INIT is zero, poison or file:PATH, not " + b.init);
            }
            for (const BufferSpec& other : task->buffers) {
                if (other.name == b.name) badPlan(line, "buffer " + b.name + " twice in a task");
            }
            task->buffers.push_back(b);
        } else if (what == "launch") {
            if (w.size() < 5) badPlan(line, "launch KERNEL GRID BLOCK SHARED ARG...");
            Launch l;
            l.kernel = w[1];
            l.grid = unsigned(number(w[2], line, 0x7FFFFFFFull));
            l.block = unsigned(number(w[3], line, 1024));
            l.shared = unsigned(number(w[4], line, 227u * 1024u));
            if (l.grid == 0 || l.block == 0) badPlan(line, "a launch needs at least one block of one thread");
            for (size_t k = 5; k < w.size(); ++k) {
                if (w[k][0] == '@') {
                    const std::string name = w[k].substr(1);
                    bool known = false;
                    for (const BufferSpec& b : task->buffers) known = known || b.name == name;
                    if (!known) badPlan(line, "no buffer " + name + " declared before this launch");
                    Arg a;
                    a.buffer = name;
                    l.args.push_back(a);
                } else {
                    l.args.push_back(scalar(w[k], line));
                }
            }
            task->launches.push_back(l);
        } else if (what == "time") {
            if (!task->timed || w.size() != 10 || !task->timing.output.empty()) {
                badPlan(line, "time IN OUT SEED HIGH exclusive|inclusive WARMUP LEAST MOST SPREAD, once, in a timed task");
            }
            Timing& t = task->timing;
            t.input = w[1];
            t.output = w[2];
            t.seed = number(w[3], line, ~0ull);
            t.high = uint32_t(number(w[4], line, 0x7FFFFFFFull));
            if (w[5] != "exclusive" && w[5] != "inclusive") badPlan(line, "the reference is exclusive or inclusive");
            t.inclusive = w[5] == "inclusive";
            t.warmup = uint32_t(number(w[6], line, 100));
            t.least = uint32_t(number(w[7], line, 1000));
            t.most = uint32_t(number(w[8], line, 1000));
            char* rest = nullptr;
            t.spread = std::strtod(w[9].c_str(), &rest);
            if (*rest != '\0' || !(t.spread >= 0 && t.spread < 1)) badPlan(line, "SPREAD is a fraction, 0 to 1");
            if (t.least == 0 || t.most < t.least) badPlan(line, "1 <= LEAST <= MOST");
            for (const std::string* name : {&t.input, &t.output}) {
                const BufferSpec* found = nullptr;
                for (const BufferSpec& b : task->buffers) found = b.name == *name ? &b : found;
                if (found == nullptr || found->width != 4) badPlan(line, "no 4-byte-word buffer " + *name);
            }
            if (t.input == t.output) badPlan(line, "IN and OUT are two buffers");
            for (const BufferSpec& b : task->buffers) {
                if (b.init.rfind("file:", 0) == 0) badPlan(line, "a timed task's buffers are zero or poison");
            }
        } else if (what == "dump") {
            if (task->timed) badPlan(line, "a timed task dumps its timing record, not buffers");
            for (size_t k = 1; k < w.size(); ++k) {
                bool known = false;
                for (const BufferSpec& b : task->buffers) known = known || b.name == w[k];
                if (!known) badPlan(line, "no buffer " + w[k] + " to dump");
                task->dumps.push_back(w[k]);
            }
        } else {
            badPlan(line, "unknown directive " + what);
        }
    }
    if (task != nullptr) badPlan(line, "the last task has no end");
    if (plan.module.empty()) stop(kExitUsage, "the plan names no module");
    if (plan.tasks.empty()) stop(kExitUsage, "the plan has no task");
    return plan;
}

// ---- running it --------------------------------------------------------------------

// Device 0 (of those CUDA_VISIBLE_DEVICES leaves) and its primary context, made current.
// Waiting for a kernel blocks instead of spinning, so a hung kernel costs wall time, not CPU time.
CUdevice openDevice(int status) {
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);  // a module that cannot load says so when it loads
    need(::cuInit(0), "cuInit", status);
    int count = 0;
    need(::cuDeviceGetCount(&count), "cuDeviceGetCount", status);
    if (count == 0) stop(status, "no CUDA device is visible");
    CUdevice device = 0;
    need(::cuDeviceGet(&device, 0), "cuDeviceGet", status);
    ::cuDevicePrimaryCtxSetFlags(device, CU_CTX_SCHED_BLOCKING_SYNC);  // a preference: ignore a refusal
    CUcontext context = nullptr;
    need(::cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain", status);
    need(::cuCtxSetCurrent(context), "cuCtxSetCurrent", status);
    return device;
}

// A new context: the old one's memory, device heap and modules are destroyed with it.
void freshContext(CUdevice device) {
    need(::cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
    need(::cuDevicePrimaryCtxReset(device), "cuDevicePrimaryCtxReset");
    ::cuDevicePrimaryCtxSetFlags(device, CU_CTX_SCHED_BLOCKING_SYNC);
    CUcontext context = nullptr;
    need(::cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    need(::cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

void describeModule(Writer& w, CUmodule module) {
    unsigned int count = 0;
    std::vector<CUfunction> functions;
    if (::cuModuleGetFunctionCount(&count, module) == CUDA_SUCCESS && count > 0) {
        functions.resize(count);
        if (::cuModuleEnumerateFunctions(functions.data(), count, module) != CUDA_SUCCESS) functions.clear();
    }
    if (functions.size() > kMostKernelsListed) functions.resize(kMostKernelsListed);
    std::vector<std::string> names;
    for (CUfunction f : functions) {
        const char* name = nullptr;
        if (::cuFuncGetName(&name, f) == CUDA_SUCCESS && name != nullptr) names.push_back(name);
    }
    w.u32(uint32_t(names.size()));
    for (std::string& name : names) {
        std::string plain = demangle(name.c_str());
        if (name.size() > kMostNameBytes) name.resize(kMostNameBytes);
        w.str(name);
        w.str(plain);
    }
}

// The plan's globals, read before any kernel runs: what the compiler put there, nothing a kernel wrote.
void readGlobals(Writer& w, CUmodule module, const std::vector<Global>& globals) {
    w.u32(uint32_t(globals.size()));
    for (const Global& g : globals) {
        CUdeviceptr at = 0;
        size_t bytes = 0;
        std::vector<char> data(g.bytes);
        const bool found = ::cuModuleGetGlobal(&at, &bytes, module, g.name.c_str()) == CUDA_SUCCESS &&
                           bytes == g.bytes && ::cuMemcpyDtoH(data.data(), at, data.size()) == CUDA_SUCCESS;
        w.str(g.name);
        w.u32(found ? 1 : 0);
        w.u64(found ? data.size() : 0);
        if (found) w.bytes(data.data(), data.size());
    }
}

// Waits for the launch like cuCtxSynchronize, sleeping between polls; ranOut after `limit` s.
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

struct Buffer {
    BufferSpec spec;
    CUdeviceptr base = 0;  // the first guard word
    size_t bytes() const { return size_t(spec.words()) * spec.width; }
    CUdeviceptr first() const { return base + spec.guard * spec.width; }
};

void header(Writer& w, TaskState state, uint32_t reached, CUresult r, const std::string& step) {
    w.bytes("GPRTSK01", 8);
    w.u32(state);
    w.u32(reached);
    w.u32(uint32_t(r));
    w.str(r == CUDA_SUCCESS ? "" : errorName(r));
    w.str(r == CUDA_SUCCESS ? "" : errorText(r));
    w.str(step);
}

// One task. False when a CUDA error ended it (the context may be unusable now).
bool runTask(size_t index, const Task& task, CUmodule module, double limit) {
    const std::string path = "task-" + std::to_string(index) + ".bin";
    {
        Writer marker(path);
        header(marker, kStarted, 0, CUDA_SUCCESS, "");
        marker.close();
    }
    std::map<std::string, Buffer> buffers;
    uint32_t reached = 0;
    auto release = [&buffers]() {
        for (auto& entry : buffers) {
            if (entry.second.base != 0) ::cuMemFree(entry.second.base);
        }
    };
    auto failed = [&](TaskState state, CUresult r, const std::string& step) {
        Writer w(path);
        header(w, state, reached, r, step);
        w.close();
        if (state == kCudaError) std::fprintf(stderr, "gpu_runner: task %zu: %s: %s\n", index, step.c_str(),
                                              errorName(r).c_str());
        release();
        return state != kCudaError;  // a missing kernel leaves the context fine
    };

    for (const BufferSpec& spec : task.buffers) {
        Buffer b;
        b.spec = spec;
        CUresult r = ::cuMemAlloc(&b.base, std::max<size_t>(b.bytes(), 1));
        if (r != CUDA_SUCCESS) return failed(kCudaError, r, "allocating " + spec.name);
        buffers[spec.name] = b;
        r = ::cuMemsetD8(b.base, spec.init == "zero" ? 0 : 0xFF, b.bytes());
        if (r == CUDA_SUCCESS && spec.init == "zero" && spec.guard > 0) {
            r = ::cuMemsetD8(b.base, 0xFF, spec.guard * spec.width);
            if (r == CUDA_SUCCESS) r = ::cuMemsetD8(b.first() + spec.count * spec.width, 0xFF, spec.guard * spec.width);
        }
        if (r == CUDA_SUCCESS && spec.init.rfind("file:", 0) == 0) {
            const std::vector<char> data = readFile(spec.init.substr(5));
            if (data.size() != spec.count * spec.width) {
                stop(kExitUsage, spec.init.substr(5) + " holds " + std::to_string(data.size()) + " bytes; buffer " +
                                     spec.name + " wants " + std::to_string(spec.count * spec.width));
            }
            r = ::cuMemcpyHtoD(b.first(), data.data(), data.size());
        }
        if (r != CUDA_SUCCESS) return failed(kCudaError, r, "filling " + spec.name);
    }

    for (const Launch& l : task.launches) {
        if (reached > 0) {  // the marker names the launch a killed process was in
            Writer marker(path);
            header(marker, kStarted, reached, CUDA_SUCCESS, "");
            marker.close();
        }
        CUfunction kernel = nullptr;
        if (::cuModuleGetFunction(&kernel, module, l.kernel.c_str()) != CUDA_SUCCESS) {
            return failed(kNoSuchKernel, CUDA_SUCCESS, l.kernel);
        }
        std::vector<CUdeviceptr> pointers(l.args.size());
        std::vector<void*> params(l.args.size());
        for (size_t k = 0; k < l.args.size(); ++k) {
            if (!l.args[k].buffer.empty()) {
                pointers[k] = buffers.at(l.args[k].buffer).first();
                params[k] = &pointers[k];
            } else {
                params[k] = const_cast<unsigned char*>(l.args[k].value.data());
            }
        }
        CUresult r = ::cuLaunchKernel(kernel, l.grid, 1, 1, l.block, 1, 1, l.shared, nullptr,
                                      params.empty() ? nullptr : params.data(), nullptr);
        if (r != CUDA_SUCCESS) return failed(kCudaError, r, "launching " + l.kernel);
        bool ranOut = false;
        r = waitForLaunch(limit, ranOut);
        if (ranOut) {
            std::fprintf(stderr, "gpu_runner: task %zu: %s ran past the launch limit of %g s\n", index,
                         l.kernel.c_str(), limit);
            std::fflush(stderr);
            std::_Exit(kExitHung);  // the task file still says "started"
        }
        if (r != CUDA_SUCCESS) return failed(kCudaError, r, "running " + l.kernel);
        ++reached;
    }

    std::vector<std::vector<char>> dumps;
    for (const std::string& name : task.dumps) {
        const Buffer& b = buffers.at(name);
        dumps.emplace_back(b.bytes());
        const CUresult r = ::cuMemcpyDtoH(dumps.back().data(), b.base, b.bytes());
        if (r != CUDA_SUCCESS) return failed(kCudaError, r, "copying " + name + " back");
    }
    Writer w(path);
    header(w, kFinished, reached, CUDA_SUCCESS, "");
    for (const std::vector<char>& d : dumps) {
        w.u64(d.size());
        w.bytes(d.data(), d.size());
    }
    w.close();
    release();
    return true;
}

// ---- timed tasks -------------------------------------------------------------------
//
// A timed task runs its one launch many times, interleaved with CUB's scan of the same
// input and a device-to-device copy of it, all on one stream the runner owns; every
// repetition r (warm-up ones too):
//   1. every buffer of the task back to its INIT (zero or poison, guards poisoned), the
//      reference buffer (OUT's shape) poisoned, IN filled with repetition r's words (the
//      library's fill from SEED: no two repetitions, and no two gradings, alike), and
//      IN hashed (the hash of IN "before");
//   2. the three measurements, in an order that rotates with r (submission, CUB, copy;
//      CUB, copy, submission; copy, submission, CUB). Before each: the flush buffer
//      (four times the L2, at least 256 MiB) written, the persisting-L2 lines reset to
//      normal (cuCtxResetPersistingL2Cache) and the stream's access-policy window
//      cleared; the stream drained. Each is timed by two events around it on the stream;
//      the submission's launch also by the host clock from before the first event to the
//      end of a device-wide cuCtxSynchronize (work the events did not cover would show
//      there). Right after the submission's launch, IN is hashed again ("after") and all
//      of OUT's words (guards too) hashed; right after CUB's scan, the reference's. Each
//      hash is copied to the host at once, before anything of the submission runs again.
//   3. the SM and memory clocks (NVML, when libnvidia-ml loads; else 0).
// The count adapts: after WARMUP repetitions, at least LEAST and at most MOST are
// measured, stopping once the median absolute deviation of the submission's times and
// of CUB's are both at most SPREAD of their medians. Nothing is judged here: Python
// compares the hashes (the submission's OUT with CUB's, IN before with after) of every
// repetition and decides which times count.
//
// The record (the task's one "dump", after the task file's header): "GPRTIM01", str the
// device's name, u32 major, u32 minor, u64 L2 bytes, u64 flush bytes, str the clocks'
// source ("nvml" or "attribute"), u32 the SM's and u32 the memory's top clock (MHz),
// u32 warmup, u32 why it stopped (0 spread reached, 1 MOST measured), u32 repetitions;
// per repetition: u32 order (0, 1, 2 as above), f64 submission ms (events), f64 CUB ms,
// f64 copy ms, f64 submission wall ms, u64 hash IN before, u64 hash IN after, u64 hash
// OUT, u64 hash reference, u32 SM MHz, u32 memory MHz.

struct Library {
    void* handle = nullptr;
    int (*version)() = nullptr;
    int (*tempBytes)(size_t, size_t*) = nullptr;
    int (*scan)(void*, size_t, const void*, void*, size_t, int, CUstream) = nullptr;
    int (*fill)(void*, size_t, uint64_t, uint32_t, uint32_t, CUstream) = nullptr;
    int (*hash)(const void*, size_t, uint64_t, void*, CUstream) = nullptr;
};

// The library, or nullptr with `why` said (the harness's own failure, never the submission's).
Library* openLibrary(const std::string& path, std::string& why) {
    static Library lib;
    if (lib.handle != nullptr) return &lib;
    const std::string where = path.find('/') == std::string::npos ? "./" + path : path;
    void* handle = ::dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        why = "cannot load the timing library " + path + ": " + ::dlerror();
        return nullptr;
    }
    bool complete = true;
    auto get = [&](const char* name) {
        void* f = ::dlsym(handle, name);
        if (f == nullptr && complete) why = std::string("the timing library lacks ") + name;
        complete = complete && f != nullptr;
        return f;
    };
    lib.version = reinterpret_cast<int (*)()>(get("scanlab_timing_version"));
    lib.tempBytes = reinterpret_cast<int (*)(size_t, size_t*)>(get("scanlab_cub_temp_bytes"));
    lib.scan = reinterpret_cast<int (*)(void*, size_t, const void*, void*, size_t, int, CUstream)>(
        get("scanlab_cub_scan_i32"));
    lib.fill = reinterpret_cast<int (*)(void*, size_t, uint64_t, uint32_t, uint32_t, CUstream)>(get("scanlab_fill_u32"));
    lib.hash = reinterpret_cast<int (*)(const void*, size_t, uint64_t, void*, CUstream)>(get("scanlab_hash_u32"));
    if (complete && lib.version() != 1) {
        why = "the timing library is of another version";
        complete = false;
    }
    if (!complete) return nullptr;
    lib.handle = handle;
    return &lib;
}

// NVML, found at run time: the clocks of the device the runner uses (by its PCI bus id).
class Clocks {
public:
    explicit Clocks(CUdevice device) {
        handle_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        char bus[64] = {};
        if (handle_ != nullptr && ::cuDeviceGetPCIBusId(bus, sizeof bus - 1, device) == CUDA_SUCCESS) {
            auto init = reinterpret_cast<int (*)()>(::dlsym(handle_, "nvmlInit_v2"));
            auto byBus = reinterpret_cast<int (*)(const char*, void**)>(::dlsym(handle_, "nvmlDeviceGetHandleByPciBusId_v2"));
            clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(::dlsym(handle_, "nvmlDeviceGetClockInfo"));
            maxClock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(::dlsym(handle_, "nvmlDeviceGetMaxClockInfo"));
            ok_ = init != nullptr && byBus != nullptr && clock_ != nullptr && maxClock_ != nullptr && init() == 0 &&
                  byBus(bus, &device_) == 0;
        }
        if (ok_) {
            maxClock_(device_, kSm, &topSm_);
            maxClock_(device_, kMemory, &topMemory_);
        } else {  // the driver's typical and peak clocks (kHz), when NVML cannot be had
            int sm = 0, memory = 0;
            ::cuDeviceGetAttribute(&sm, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, device);
            ::cuDeviceGetAttribute(&memory, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, device);
            topSm_ = unsigned(sm / 1000);
            topMemory_ = unsigned(memory / 1000);
        }
    }
    std::string source() const { return ok_ ? "nvml" : "attribute"; }
    unsigned topSm() const { return topSm_; }
    unsigned topMemory() const { return topMemory_; }
    unsigned now(bool memory) const {
        unsigned mhz = 0;
        if (ok_ && clock_(device_, memory ? kMemory : kSm, &mhz) != 0) mhz = 0;
        return mhz;
    }

private:
    static constexpr int kSm = 1, kMemory = 2;  // NVML_CLOCK_SM, NVML_CLOCK_MEM
    void* handle_ = nullptr;
    void* device_ = nullptr;
    int (*clock_)(void*, int, unsigned*) = nullptr;
    int (*maxClock_)(void*, int, unsigned*) = nullptr;
    bool ok_ = false;
    unsigned topSm_ = 0, topMemory_ = 0;
};

struct Repetition {
    uint32_t order = 0;
    double student = 0, cub = 0, copy = 0, wall = 0;
    uint64_t inBefore = 0, inAfter = 0, out = 0, reference = 0;
    uint32_t sm = 0, memory = 0;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// Median absolute deviation over the median: how far the times spread (0 when all agree).
double spreadOf(const std::vector<double>& v) {
    const double m = median(v);
    std::vector<double> away;
    for (double x : v) away.push_back(x > m ? x - m : m - x);
    return m > 0 ? median(away) / m : 1;
}

// A CUDA error of a timed task: where it happened, for the task file.
struct Failure {
    CUresult result = CUDA_SUCCESS;
    std::string step;
};

bool runTimedTask(size_t index, const Task& task, CUmodule module, double limit, const std::string& libraryPath,
                  CUdevice device) {
    const std::string path = "task-" + std::to_string(index) + ".bin";
    {
        Writer marker(path);
        header(marker, kStarted, 0, CUDA_SUCCESS, "");
        marker.close();
    }
    const Timing& t = task.timing;
    const Launch& l = task.launches[0];
    std::string why;
    Library* found = openLibrary(libraryPath, why);
    if (found == nullptr) {
        Writer w(path);
        header(w, kHarness, 0, CUDA_SUCCESS, why);
        w.close();
        stop(kExitRunner, why);
    }
    Library& lib = *found;
    Clocks clocks(device);
    std::map<std::string, Buffer> buffers;
    std::vector<CUdeviceptr> own;  // the runner's: reference, copy target, flush, hash words, CUB's storage
    CUstream stream = nullptr;
    CUevent marks[2] = {nullptr, nullptr};
    auto release = [&]() {
        for (auto& entry : buffers) {
            if (entry.second.base != 0) ::cuMemFree(entry.second.base);
        }
        for (CUdeviceptr p : own) ::cuMemFree(p);
        for (CUevent e : marks) {
            if (e != nullptr) ::cuEventDestroy(e);
        }
        if (stream != nullptr) ::cuStreamDestroy(stream);
    };
    auto failed = [&](TaskState state, const Failure& f, uint32_t reached) {
        Writer w(path);
        header(w, state, reached, f.result, f.step);
        w.close();
        if (state == kCudaError) {
            std::fprintf(stderr, "gpu_runner: task %zu: %s: %s\n", index, f.step.c_str(), errorName(f.result).c_str());
        }
        release();
        return state != kCudaError;
    };
    Failure f;
    auto ok = [&f](CUresult r, const std::string& step) {
        if (r != CUDA_SUCCESS && f.result == CUDA_SUCCESS) f = Failure{r, step};
        return r == CUDA_SUCCESS;
    };
    auto alloc = [&](size_t bytes, const std::string& what) {
        CUdeviceptr p = 0;
        if (ok(::cuMemAlloc(&p, std::max<size_t>(bytes, 1)), "allocating " + what)) own.push_back(p);
        return p;
    };

    CUfunction kernel = nullptr;
    if (::cuModuleGetFunction(&kernel, module, l.kernel.c_str()) != CUDA_SUCCESS) {
        return failed(kNoSuchKernel, Failure{CUDA_SUCCESS, l.kernel}, 0);
    }
    ok(::cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "creating the stream");
    for (CUevent& e : marks) ok(::cuEventCreate(&e, CU_EVENT_DEFAULT), "creating an event");
    for (const BufferSpec& spec : task.buffers) {
        Buffer b;
        b.spec = spec;
        if (!ok(::cuMemAlloc(&b.base, std::max<size_t>(b.bytes(), 1)), "allocating " + spec.name)) break;
        buffers[spec.name] = b;
    }
    if (f.result != CUDA_SUCCESS) return failed(kCudaError, f, 0);
    const Buffer& in = buffers.at(t.input);
    const Buffer& out = buffers.at(t.output);
    if (in.spec.count != out.spec.count) stop(kExitUsage, "a timed task's IN and OUT hold as many words");
    const size_t n = in.spec.count;
    ok(::cuMemsetD8(in.base, 0xFF, in.bytes()), "poisoning " + t.input);  // the guards stay so: hashed with IN
    if (f.result != CUDA_SUCCESS) return failed(kCudaError, f, 0);
    int l2 = 0;
    ::cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device);
    const size_t flushBytes = std::max<size_t>(4 * size_t(l2), size_t(256) << 20);
    size_t tempBytes = 0;
    if (lib.tempBytes(n, &tempBytes) != 0) {
        Writer w(path);
        header(w, kHarness, 0, CUDA_SUCCESS, "CUB's scan could not say its temporary storage");
        w.close();
        stop(kExitRunner, "CUB's scan could not say its temporary storage");
    }
    const CUdeviceptr reference = alloc(out.bytes(), "the reference");
    const CUdeviceptr copyTarget = alloc(n * 4, "the copy's target");
    const CUdeviceptr flush = alloc(flushBytes, "the flush buffer");
    const CUdeviceptr sums = alloc(sizeof(uint64_t), "the hash word");
    const CUdeviceptr temp = alloc(tempBytes, "CUB's storage");
    if (f.result != CUDA_SUCCESS) return failed(kCudaError, f, 0);
    ::cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0);  // no set-aside L2 (refused on GPUs without one)

    std::vector<CUdeviceptr> pointers(l.args.size());
    std::vector<void*> params(l.args.size());
    for (size_t k = 0; k < l.args.size(); ++k) {
        if (!l.args[k].buffer.empty()) {
            pointers[k] = buffers.at(l.args[k].buffer).first();
            params[k] = &pointers[k];
        } else {
            params[k] = const_cast<unsigned char*>(l.args[k].value.data());
        }
    }
    const uint64_t key = t.seed * 0x9E3779B97F4A7C15ull + 0x5CA1AB1Eull;

    // Waits for the stream by spinning (the host clock must see the end at once), then for the whole device.
    auto drain = [&](const std::string& what) {
        const auto start = std::chrono::steady_clock::now();
        for (;;) {
            const CUresult r = ::cuStreamQuery(stream);
            if (r != CUDA_ERROR_NOT_READY) return ok(r, what) && ok(::cuCtxSynchronize(), what);
            const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
            if (waited.count() > limit) {
                std::fprintf(stderr, "gpu_runner: task %zu: %s ran past the launch limit of %g s\n", index,
                             what.c_str(), limit);
                std::fflush(stderr);
                std::_Exit(kExitHung);  // the task file still says "started"
            }
        }
    };
    auto hashOf = [&](CUdeviceptr words, size_t count, uint64_t& into, const std::string& what) {
        uint64_t got = 0;
        if (ok(::cuMemsetD8Async(sums, 0, sizeof got, stream), what) &&
            ok(CUresult(lib.hash(reinterpret_cast<const void*>(words), count, key,
                                 reinterpret_cast<void*>(sums), stream)), what) &&
            drain(what) && ok(::cuMemcpyDtoH(&got, sums, sizeof got), what)) {
            into = got;
        }
    };
    uint32_t flushes = 0;
    auto settle = [&](const std::string& what) {  // the L2 as no earlier launch left it
        CUlaunchAttributeValue none;
        std::memset(&none, 0, sizeof none);
        none.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_NORMAL;
        none.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_NORMAL;
        ok(::cuStreamSetAttribute(stream, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &none), what);
        drain(what);
        ::cuCtxResetPersistingL2Cache();  // persisting lines back to normal (refused where there are none)
        ok(::cuMemsetD32Async(flush, 0x5CA1AB1Eu ^ ++flushes, flushBytes / 4, stream), what);  // then written over
        drain(what);
    };
    auto elapsed = [&](double& ms, const std::string& what) {
        float got = 0;
        if (ok(::cuEventElapsedTime(&got, marks[0], marks[1]), what)) ms = got;
    };

    std::vector<Repetition> reps;
    std::vector<double> studentTimes, cubTimes;
    uint32_t stopped = 1;
    for (uint32_t r = 0; r < t.warmup + t.most; ++r) {
        const std::string at = " (repetition " + std::to_string(r) + ")";
        Repetition rep;
        rep.order = r % 3;
        for (const auto& entry : buffers) {
            const Buffer& b = entry.second;
            if (entry.first == t.input) continue;  // refilled below; its guards stay poisoned from the start
            ok(::cuMemsetD8Async(b.base, b.spec.init == "zero" ? 0 : 0xFF, b.bytes(), stream), "resetting" + at);
            if (b.spec.init == "zero" && b.spec.guard > 0) {
                ok(::cuMemsetD8Async(b.base, 0xFF, b.spec.guard * b.spec.width, stream), "resetting" + at);
                ok(::cuMemsetD8Async(b.first() + b.spec.count * b.spec.width, 0xFF, b.spec.guard * b.spec.width,
                                     stream), "resetting" + at);
            }
        }
        ok(::cuMemsetD8Async(reference, 0xFF, out.bytes(), stream), "resetting" + at);
        ok(CUresult(lib.fill(reinterpret_cast<void*>(in.first()), n, t.seed, r, t.high, stream)), "filling" + at);
        hashOf(in.base, in.spec.words(), rep.inBefore, "hashing the input" + at);
        if (f.result != CUDA_SUCCESS) return failed(kCudaError, f, r);
        for (uint32_t k = 0; k < 3; ++k) {
            const uint32_t which = (rep.order + k) % 3;  // 0 the submission, 1 CUB, 2 the copy
            settle("flushing the L2" + at);
            if (which == 0) {
                Writer marker(path);  // a process killed in the submission's launch leaves it marked
                header(marker, kStarted, r, CUDA_SUCCESS, "");
                marker.close();
                const auto start = std::chrono::steady_clock::now();
                ok(::cuEventRecord(marks[0], stream), "timing" + at);
                ok(::cuLaunchKernel(kernel, l.grid, 1, 1, l.block, 1, 1, l.shared, stream,
                                    params.empty() ? nullptr : params.data(), nullptr), "launching " + l.kernel + at);
                ok(::cuEventRecord(marks[1], stream), "timing" + at);
                drain("running " + l.kernel + at);
                const std::chrono::duration<double, std::milli> wall = std::chrono::steady_clock::now() - start;
                rep.wall = wall.count();
                elapsed(rep.student, "timing " + l.kernel + at);
                hashOf(in.base, in.spec.words(), rep.inAfter, "hashing the input" + at);
                hashOf(out.base, out.spec.words(), rep.out, "hashing the output" + at);
                rep.sm = clocks.now(false);
                rep.memory = clocks.now(true);
            } else if (which == 1) {
                ok(::cuEventRecord(marks[0], stream), "timing" + at);
                ok(CUresult(lib.scan(reinterpret_cast<void*>(temp), tempBytes, reinterpret_cast<const void*>(in.first()),
                                     reinterpret_cast<void*>(reference + out.spec.guard * 4), n, t.inclusive ? 1 : 0,
                                     stream)), "CUB's scan" + at);
                ok(::cuEventRecord(marks[1], stream), "timing" + at);
                drain("CUB's scan" + at);
                elapsed(rep.cub, "timing CUB's scan" + at);
                hashOf(reference, out.spec.words(), rep.reference, "hashing the reference" + at);
            } else {
                ok(::cuEventRecord(marks[0], stream), "timing" + at);
                ok(::cuMemcpyDtoDAsync(copyTarget, in.first(), n * 4, stream), "the copy" + at);
                ok(::cuEventRecord(marks[1], stream), "timing" + at);
                drain("the copy" + at);
                elapsed(rep.copy, "timing the copy" + at);
            }
            if (f.result != CUDA_SUCCESS) return failed(kCudaError, f, r);
        }
        reps.push_back(rep);
        if (r < t.warmup) continue;
        studentTimes.push_back(rep.student);
        cubTimes.push_back(rep.cub);
        if (studentTimes.size() >= t.least && spreadOf(studentTimes) <= t.spread && spreadOf(cubTimes) <= t.spread) {
            stopped = 0;
            break;
        }
    }

    char name[256] = {};
    ::cuDeviceGetName(name, sizeof name - 1, device);
    int major = 0, minor = 0;
    ::cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    ::cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    {
        Writer w(path);
        header(w, kFinished, uint32_t(reps.size()), CUDA_SUCCESS, "");
        std::string body = "GPRTIM01";
        auto u32 = [&body](uint32_t v) { body.append(reinterpret_cast<const char*>(&v), sizeof v); };
        auto u64 = [&body](uint64_t v) { body.append(reinterpret_cast<const char*>(&v), sizeof v); };
        auto f64 = [&body](double v) { body.append(reinterpret_cast<const char*>(&v), sizeof v); };
        auto str = [&](const std::string& s) {
            u32(uint32_t(s.size()));
            body += s;
        };
        str(name);
        u32(uint32_t(major));
        u32(uint32_t(minor));
        u64(uint64_t(l2));
        u64(flushBytes);
        str(clocks.source());
        u32(clocks.topSm());
        u32(clocks.topMemory());
        u32(t.warmup);
        u32(stopped);
        u32(uint32_t(reps.size()));
        for (const Repetition& rep : reps) {
            u32(rep.order);
            f64(rep.student);
            f64(rep.cub);
            f64(rep.copy);
            f64(rep.wall);
            u64(rep.inBefore);
            u64(rep.inAfter);
            u64(rep.out);
            u64(rep.reference);
            u32(rep.sm);
            u32(rep.memory);
        }
        w.u64(body.size());
        w.bytes(body.data(), body.size());
        w.close();
    }
    release();
    return true;
}

// ---- --probe -----------------------------------------------------------------------

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
    std::printf("gpu_runner: usable GPU: %s\n", where.c_str());
    return kExitDone;
}

std::vector<size_t> parseTasks(const std::string& text, size_t tasks) {
    std::vector<size_t> picked;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        char* rest = nullptr;
        const unsigned long k = std::strtoul(item.c_str(), &rest, 10);
        if (item.empty() || *rest != '\0' || k >= tasks) stop(kExitUsage, "bad --tasks entry " + item);
        picked.push_back(k);
    }
    if (picked.empty()) stop(kExitUsage, "--tasks names no task");
    return picked;
}

}  // namespace

int main(int argc, char** argv) {
    std::string planPath, taskList, probeModule;
    double limit = 2.0;
    for (int a = 1; a < argc; ++a) {
        const std::string flag = argv[a];
        if (a + 1 >= argc) stop(kExitUsage, flag + " needs a value");
        const std::string value = argv[++a];
        if (flag == "--plan") {
            planPath = value;
        } else if (flag == "--probe") {
            probeModule = value;
        } else if (flag == "--tasks") {
            taskList = value;
        } else if (flag == "--launch-limit") {
            char* rest = nullptr;
            limit = std::strtod(value.c_str(), &rest);
            if (*rest != '\0' || !(limit > 0 && limit <= 600)) stop(kExitUsage, "bad --launch-limit " + value);
        } else {
            stop(kExitUsage, "unknown flag " + flag);
        }
    }
    if (planPath.empty() == probeModule.empty()) {
        stop(kExitUsage, "usage: gpu_runner --plan PLAN [--tasks I,J,...] [--launch-limit SECONDS] | "
                         "gpu_runner --probe PROBE.fatbin");
    }
    if (!probeModule.empty()) return probe(probeModule);
    const Plan plan = readPlan(planPath);
    std::vector<size_t> picked;
    if (taskList.empty()) {
        for (size_t k = 0; k < plan.tasks.size(); ++k) picked.push_back(k);
    } else {
        picked = parseTasks(taskList, plan.tasks.size());
    }
    const std::vector<char> image = readFile(plan.module);

    const CUdevice device = openDevice(kExitRunner);
    CUmodule module = nullptr;
    const CUresult loaded = ::cuModuleLoadData(&module, image.data());
    {
        Writer w("module.bin");
        w.bytes("GPRMOD02", 8);
        w.u32(uint32_t(loaded));
        w.str(loaded == CUDA_SUCCESS ? "" : errorName(loaded));
        w.str(loaded == CUDA_SUCCESS ? "" : errorText(loaded));
        if (loaded == CUDA_SUCCESS) {
            describeModule(w, module);
            readGlobals(w, module, plan.globals);
        }
        w.close();
    }
    if (loaded != CUDA_SUCCESS) stop(kExitStopped, "the module did not load: " + errorName(loaded));
    std::string previous = plan.tasks[picked.front()].launches.empty() ? "" : plan.tasks[picked.front()].launches[0].kernel;
    bool first = true;
    for (size_t k : picked) {
        const std::string graded = plan.tasks[k].launches.empty() ? "" : plan.tasks[k].launches[0].kernel;
        if (!first) {
            need(::cuModuleUnload(module), "cuModuleUnload");
            module = nullptr;
            if (graded != previous) freshContext(device);
            const CUresult again = ::cuModuleLoadData(&module, image.data());
            if (again != CUDA_SUCCESS) stop(kExitStopped, "the module did not load again: " + errorName(again));
        }
        first = false;
        previous = graded;
        const bool fine = plan.tasks[k].timed ? runTimedTask(k, plan.tasks[k], module, limit, plan.library, device)
                                              : runTask(k, plan.tasks[k], module, limit);
        if (!fine) return kExitStopped;
    }
    return kExitDone;
}
