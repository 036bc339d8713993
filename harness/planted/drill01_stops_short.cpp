// Planted wrong answer for A05 drill 01 (harness/test_drills.py grades it and checks the
// diagnosis). Both conversions' loops stop one element short (i + 1 < n), so the last
// element keeps the grader's poison. Expected: both fail with "does the loop stop one
// short", not the diagnosis of the shift incl[i] = excl[i + 1].

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
