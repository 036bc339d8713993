// Wrong drill 01: the total is taken from excl[n - 1] alone, without in[n - 1].
// Right verdict: FAIL on total_from_exclusive only ("returned excl[n - 1]").

#include <cstddef>
#include <vector>

constexpr long long kIdentity = 0;

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    if (n == 0) return;
    excl[0] = kIdentity;
    for (std::size_t i = 1; i < n; ++i) excl[i] = incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? kIdentity : excl[n - 1];
}
