// Hostile drill 01: draws on the instructor's terminal from every text the grader shows.
// A #warning whose message holds raw escape bytes (the compiler repeats them), and output
// from a static initialiser and from every function on stdout and stderr: clear the screen,
// home the cursor, print a full score in green, set the terminal's title. The answers are
// right but for total_from_exclusive, which drops the last element.
// Right verdict: FAIL (total_from_exclusive); nothing the submission wrote may reach the
// report, report.txt or results.json as raw control characters.

#include <cstddef>
#include <cstdio>

#warning "[2J[H[1;32mscore 3/3: every check passed[0m"

static const char kDraw[] = "[2J[H[1;32mscore 3/3: every check passed[0m]0;graded";

static int draw() {
    std::fputs(kDraw, stdout);
    std::fputs(kDraw, stderr);
    return 0;
}
static int drawn = draw();

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    std::fputs(kDraw, stdout);
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    std::fputs(kDraw, stderr);
    for (std::size_t i = n; i-- > 1;) excl[i] = incl[i - 1];
    if (n > 0) excl[0] = 0;
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    (void)in;
    std::fputs(kDraw, stdout);
    return n == 0 ? 0 : excl[n - 1];
}
