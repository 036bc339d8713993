// Hostile drill 01: right answers, and on the page example it writes 8 MiB files into its
// working folder until a write fails: the folder was a bind of the host's temporary
// folder with only a per-file limit, so one run put a gigabyte on the host's disk. The
// scratch folder is now a tmpfs of its own (or watched where the grader cannot mount one).
// Bounded: at most 200 files. Right verdict: FAIL, naming the "disk limit".

#include <cstddef>
#include <cstdio>
#include <vector>

static void fill() {
    static bool done = false;
    if (done) return;
    done = true;
    std::vector<char> block(8 << 20, 'x');
    for (int k = 0; k < 200; ++k) {
        char name[32];
        std::snprintf(name, sizeof name, "fill-%03d.bin", k);
        FILE* f = std::fopen(name, "wb");
        if (f == nullptr) break;
        const bool ok = std::fwrite(block.data(), 1, block.size(), f) == block.size();
        std::fclose(f);
        if (!ok) break;
    }
}

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    if (n == 8) fill();
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
