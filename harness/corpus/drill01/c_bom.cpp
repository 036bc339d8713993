// Correct drill 01 saved by an editor that starts the file with a UTF-8 byte-order
// mark (EF BB BF). g++ accepts it at the start of a file; a grader that pastes the
// file into another must not choke on it. Right verdict: PASS.

#include <cstddef>

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
