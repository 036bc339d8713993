// Wrong drill 01: both conversions' loops stop one element short (i + 1 < n), so the
// last element keeps the grader's poison. Right verdict: FAIL on exclusive_to_inclusive
// and inclusive_to_exclusive, each diagnosed as "does the loop stop one short", not as
// the shift incl[i] = excl[i + 1].

#include <cstddef>

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i + 1 < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    if (n == 0) return;
    excl[0] = 0;
    for (std::size_t i = 1; i + 1 < n; ++i) excl[i] = incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
