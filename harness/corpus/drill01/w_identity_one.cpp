// Wrong drill 01: the wrong identity. excl[0] and the empty total use 1 (the
// identity of *), not 0 (the identity of +). Right verdict: FAIL on
// inclusive_to_exclusive and total_from_exclusive; exclusive_to_inclusive passes.

#include <cstddef>

constexpr long long kIdentity = 1;

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? kIdentity : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? kIdentity : excl[n - 1] + in[n - 1];
}
