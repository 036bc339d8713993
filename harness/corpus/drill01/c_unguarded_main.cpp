// Correct drill 01 whose main() is NOT inside #ifndef SCANLAB_GRADER, and which
// would fail loudly if it ever ran (it returns 1 and prints FAILED).
// Right verdict: PASS, with the note that "your main() is not used".

#include <cstddef>
#include <cstdio>

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}

int main(int argc, char** argv) {
    (void)argv;
    std::printf("FAILED: this main must never be the grader's (argc %d)\n", argc);
    return 1;
}
