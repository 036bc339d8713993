// Wrong drill 01: excl[0] is set to incl[0] instead of the identity 0; the rest is
// right. Right verdict: FAIL on inclusive_to_exclusive only ("must be the identity 0").

#include <cstddef>
#include <vector>

constexpr long long kIdentity = 0;

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    if (n == 0) return;
    excl[0] = incl[0];  // should be the identity
    for (std::size_t i = 1; i < n; ++i) excl[i] = incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? kIdentity : excl[n - 1] + in[n - 1];
}
