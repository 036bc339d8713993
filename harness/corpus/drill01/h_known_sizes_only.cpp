// Hostile drill 01: fitted to the sizes the grader has shown, right for nothing else.
// Every size the starter's sandbox, the README and the old feedback named (0, 1, 8, 256,
// 1000, the hidden 2, 255, 257, 1001 and the drawn 2001..4999: all n <= 5000; and
// n = 1000003, the one large size the feedback printed) gets the right answer. Any other
// size gets a cheap wrong one: incl[n - 1] and excl[n - 1] are left unwritten and the total
// is off by one. Against hidden sizes that are fixed, it passes under every seed.
// Right verdict: FAIL on all three functions: the large hidden sizes are drawn from the
// grading seed over 10^5..2*10^6, so each grade meets sizes this file has never seen.

#include <cstddef>

static bool seen(std::size_t n) { return n <= 5000 || n == 1000003; }

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    const std::size_t end = seen(n) ? n : n - 1;
    for (std::size_t i = 0; i < end; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    const std::size_t end = seen(n) ? n : n - 1;
    for (std::size_t i = 0; i < end; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    if (n == 0) return 0;
    return excl[n - 1] + in[n - 1] + (seen(n) ? 0 : 1);
}
