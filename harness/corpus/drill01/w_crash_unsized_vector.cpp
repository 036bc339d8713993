// Wrong drill 01: inclusive_to_exclusive writes through an empty std::vector (the
// temporary was never sized), so it crashes. Right verdict: FAIL on inclusive_to_exclusive
// only ("crashed: killed by SIGSEGV"); the grader itself does not crash.

#include <cstddef>
#include <vector>

constexpr long long kIdentity = 0;

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    std::vector<long long> shifted;  // never resized
    volatile long long* out = shifted.data();
    for (std::size_t i = 0; i < n; ++i) out[i] = i == 0 ? kIdentity : incl[i - 1];
    for (std::size_t i = 0; i < n; ++i) excl[i] = out[i];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? kIdentity : excl[n - 1] + in[n - 1];
}
