// Wrong drill 01: the total is accumulated in an `int`, which is right on small
// values and overflows once the sum passes 2^31 (the exercise's types are 64-bit).
// Right verdict: FAIL on total_from_exclusive only (hidden inputs with large values).

#include <cstddef>

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    if (n == 0) return 0;
    int total = static_cast<int>(excl[n - 1]);  // truncates, then wraps
    total += static_cast<int>(in[n - 1]);
    return total;
}
