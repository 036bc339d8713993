// Hostile drill 01: correct, but on the page example (n = 8) exclusive_to_inclusive
// forks up to 300 children named evil-fork that sleep 30 s (bounded: it stops at the
// first failed fork). Right verdict: FAIL on exclusive_to_inclusive, naming the
// "process limit"; no evil-fork left alive after the grade.

#include <cstddef>
#include <sys/prctl.h>
#include <unistd.h>

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    if (n == 8) {
        for (int k = 0; k < 300; ++k) {
            const pid_t pid = fork();
            if (pid < 0) break;
            if (pid == 0) {
                prctl(PR_SET_NAME, "evil-fork", 0, 0, 0);
                sleep(30);
                _exit(0);
            }
        }
    }
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
