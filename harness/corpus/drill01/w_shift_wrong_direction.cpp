// Wrong drill 01: the inclusive scan is shifted left instead of right (excl[i] =
// incl[i + 1]). Right verdict: FAIL on inclusive_to_exclusive only ("shifted the wrong way").

#include <cstddef>
#include <vector>

constexpr long long kIdentity = 0;

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i + 1 < n; ++i) excl[i] = incl[i + 1];
    if (n > 0) excl[n - 1] = incl[n - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? kIdentity : excl[n - 1] + in[n - 1];
}
