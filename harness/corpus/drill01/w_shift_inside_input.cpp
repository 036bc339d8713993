// Wrong drill 01: inclusive_to_exclusive shifts in place inside its INPUT incl
// (const cast away), back to front, then copies it out. Every value of excl is
// right; incl is left changed. Right verdict: FAIL on inclusive_to_exclusive
// ("changed its input"); the other two pass.

#include <cstddef>

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    long long* scratch = const_cast<long long*>(incl);
    for (std::size_t i = n; i-- > 1;) scratch[i] = scratch[i - 1];
    if (n > 0) scratch[0] = 0;
    for (std::size_t i = 0; i < n; ++i) excl[i] = scratch[i];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
