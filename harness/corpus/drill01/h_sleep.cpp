// Hostile drill 01: correct, but exclusive_to_inclusive sleeps 60 s on the page
// example (n = 8), longer than any per-run wall limit.
// Right verdict: FAIL on exclusive_to_inclusive only, naming the "time limit".

#include <cstddef>
#include <unistd.h>

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    if (n == 8) sleep(60);
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
