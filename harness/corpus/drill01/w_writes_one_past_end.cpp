// Wrong drill 01: the shift loop runs one step too far and writes excl[n], one past the
// end; every value inside the array is right. Right verdict: FAIL on
// inclusive_to_exclusive only ("one past the end").

#include <cstddef>
#include <vector>

constexpr long long kIdentity = 0;

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    if (n == 0) return;
    excl[0] = kIdentity;
    for (std::size_t i = 0; i < n; ++i) excl[i + 1] = incl[i];  // i + 1 reaches n
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? kIdentity : excl[n - 1] + in[n - 1];
}
