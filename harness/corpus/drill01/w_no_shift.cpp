// Wrong drill 01: inclusive_to_exclusive sets the identity at excl[0] and then copies
// incl without shifting it: excl[i] = incl[i]. Right verdict: FAIL on
// inclusive_to_exclusive only, diagnosed as "no shift", not "shifted the wrong way".

#include <cstddef>

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    if (n == 0) return;
    excl[0] = 0;
    for (std::size_t i = 1; i < n; ++i) excl[i] = incl[i];  // the shift is missing
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
