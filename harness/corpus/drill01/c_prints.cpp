// Correct drill 01 whose exclusive_to_inclusive printf()s its n. Right verdict: PASS;
// self-study shows what it printed, course mode does not (it would show hidden sizes).
#include <cstddef>
#include <cstdio>
void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
 std::printf("e2i n=%zu\n", n); for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}
void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) { for (std::size_t i = 0; i < n; ++i) excl[i] = i ? incl[i-1] : 0; }
long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) { return n ? excl[n-1] + in[n-1] : 0; }
