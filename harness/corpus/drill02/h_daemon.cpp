// Hostile drill 02: correct, but segmented_scan_tile starts a daemon on the page
// example (n = 8): fork, setsid, fork again, stdio to /dev/null, named evil-daemon,
// sleeping 60 s. Right verdict: PASS (the answers are right), and no evil-daemon
// alive once the grade is printed.

#include <algorithm>
#include <cstddef>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
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
    std::vector<T> src(x, x + n), dst(x, x + n);
    for (std::size_t offset = 1; offset < n; offset *= 2) {
        for (std::size_t i = 0; i < n; ++i) dst[i] = i >= offset ? op(src[i - offset], src[i]) : src[i];
        src.swap(dst);
    }
    std::copy(src.begin(), src.end(), x);
}

static void daemonize() {
    const pid_t first = fork();
    if (first < 0) return;
    if (first > 0) {
        waitpid(first, nullptr, 0);
        return;
    }
    setsid();
    if (fork() != 0) _exit(0);
    prctl(PR_SET_NAME, "evil-daemon", 0, 0, 0);
    const int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
    sleep(60);
    _exit(0);
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    if (n == 8) daemonize();
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}
