// Correct drill 01 whose main() is not inside #ifndef SCANLAB_GRADER, and prints PASS.
// The grader compiles the file alone and renames its main in the object file, so it
// never meets the grader's own. Right verdict: PASS, with the note "your main() is not used".

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

int main() {
    std::printf("PASS\n");
    return 0;
}
