// Hostile drill 01: correct, but on the page example (n = 8) total_from_exclusive
// allocates and touches 256 MiB blocks without end (bounded here at 16 GiB, and at
// 4 GiB left free on the machine, so an unsandboxed run cannot exhaust it).
// Right verdict: FAIL on total_from_exclusive, naming the "memory limit".

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {
long long availableKiB() {
    long long kib = -1;
    if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, f)) {
            if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
        }
        std::fclose(f);
    }
    return kib;
}
}  // namespace

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    if (n == 8) {
        const std::size_t block = std::size_t(256) << 20;
        std::vector<char*> hoard;
        while (hoard.size() < 64) {  // 64 x 256 MiB = 16 GiB
            const long long kib = availableKiB();
            if (kib >= 0 && kib < (4LL << 20)) break;
            char* p = new char[block];  // plain new: failure goes to the new_handler
            std::memset(p, 0x5A, block);
            hoard.push_back(p);
        }
        for (char* p : hoard) delete[] p;
    }
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
