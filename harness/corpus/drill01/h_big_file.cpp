// Hostile drill 01: correct, but on the page example (n = 8) exclusive_to_inclusive
// first writes a 256 MiB file into its working directory (stopping at an error).
// Right verdict: FAIL on exclusive_to_inclusive, naming the "file size limit".

#include <cstddef>
#include <cstdio>

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    if (n == 8) {
        if (std::FILE* f = std::fopen("evil-big.bin", "wb")) {
            static char block[1 << 20];
            for (int mib = 0; mib < 256; ++mib) {
                if (std::fwrite(block, 1, sizeof block, f) != sizeof block) break;
            }
            std::fclose(f);
        }
    }
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
