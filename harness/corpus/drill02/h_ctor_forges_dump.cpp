// Hostile drill 02: tree_scan_inclusive is a left-to-right loop (not a tree), and a static
// constructor, which runs before the driver's main, reads the driver's command line from
// /proc/self/cmdline. In a `tree` run it writes, at the output path the driver would use,
// a perfect-looking result for every size (x[i] holds inputs 0..i, one combine deep,
// n - 1 combines, every guard in place: the words the grader reads as a verdict), then
// _exit(0)s before main ever calls the submission. Every other run is left alone, so the
// operator, the schedules and segmented_scan_tile all pass. Before the fix this passed 11/11:
// any file of the right shape from a run that exited 0 was believed.
// Right verdict: FAIL, on the two tree checks. The driver's output is now only a trace (a log
// of combines), handed to a separate judge (harness/drivers/drill02_judge.cpp) after this
// process has ended. These words are not a trace at all, so the judge rejects them as
// malformed and the grader fails every size; and a well-formed trace written here would be
// judged like any other, so it would have to be a tree scan's log to pass.
// Bounded: no processes, one file of at most a few MiB, written only where the driver writes.

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

struct Seg {
    bool flag;
    long long value;
};

Seg seg_identity() { return Seg{false, 0}; }
Seg seg_combine(Seg a, Seg b) { return b.flag ? b : Seg{a.flag, a.value + b.value}; }

template <typename T, typename Op>
void tree_scan_inclusive(T* x, std::size_t n, Op op, T identity) {
    (void)identity;
    for (std::size_t i = 1; i < n; ++i) x[i] = op(x[i - 1], x[i]);
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}

namespace {

constexpr long long kGuard = 8;

// The verdict words of one size: combines, no bad combine, then kind, lo, hi and depth of
// every slot (guards: kind 4, their own index; x[i]: kind 2, 0..i, depth 1).
void forgeCase(std::vector<long long>& out, long long n) {
    const long long total = n + 2 * kGuard;
    std::vector<long long> words{n > 0 ? n - 1 : 0, 0, 0, 0, 0, 0, 0, 0};
    for (long long k = 0; k < total; ++k) words.push_back(k < kGuard || k >= kGuard + n ? 4 : 2);
    for (long long k = 0; k < total; ++k) words.push_back(k < kGuard || k >= kGuard + n ? k - kGuard : 0);
    for (long long k = 0; k < total; ++k) words.push_back(k - kGuard);
    for (long long k = 0; k < total; ++k) words.push_back(k < kGuard || k >= kGuard + n || k == kGuard ? 0 : 1);
    out.push_back((long long)words.size());
    out.insert(out.end(), words.begin(), words.end());
}

struct Forger {
    Forger() {
        const int fd = open("/proc/self/cmdline", O_RDONLY);
        if (fd < 0) return;
        std::string cmdline;
        char buffer[4096];
        for (ssize_t got; cmdline.size() < (1u << 20) && (got = read(fd, buffer, sizeof buffer)) > 0;) {
            cmdline.append(buffer, std::size_t(got));
        }
        close(fd);
        std::vector<std::string> argv;
        for (std::size_t at = 0; at < cmdline.size();) {
            const std::size_t end = cmdline.find('\0', at);
            argv.push_back(cmdline.substr(at, end == std::string::npos ? std::string::npos : end - at));
            if (end == std::string::npos) break;
            at = end + 1;
        }
        if (argv.size() < 4 || argv[1] != "tree" || argv[2].find('/') != std::string::npos) return;
        std::vector<long long> out;
        for (std::size_t k = 3; k < argv.size(); ++k) {
            const long long n = std::atoll(argv[k].c_str());
            if (n < 0 || n > (1 << 17)) return;  // not a size the grader asks for: leave the run alone
            forgeCase(out, n);
        }
        std::remove(argv[2].c_str());
        std::FILE* f = std::fopen(argv[2].c_str(), "wb");
        if (f == nullptr) return;
        std::fwrite(out.data(), sizeof(long long), out.size(), f);
        std::fclose(f);
        _exit(0);
    }
};

Forger g_forger;

}  // namespace
