// Hostile drill 01: while exclusive_to_inclusive runs, every not-yet-existing path on
// its command line (the driver's output file) becomes a symlink to the repository's
// starter, so the driver writes its results THROUGH it into @REPO@/exercises/.
// total_from_exclusive is wrong (it returns excl[n - 1]). Right verdict: FAIL, and
// the starter unchanged (the grader never follows a link out of its scratch).

#include <cstddef>
#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {
void redirectOutputs() {
    std::vector<std::string> args;
    if (std::FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
        std::string cur;
        int c;
        while ((c = std::fgetc(f)) != EOF) {
            if (c == 0) {
                args.push_back(cur);
                cur.clear();
            } else {
                cur.push_back(char(c));
            }
        }
        std::fclose(f);
    }
    for (std::size_t a = 1; a < args.size(); ++a) {
        struct stat st;
        if (args[a].empty() || args[a][0] == '-' || lstat(args[a].c_str(), &st) == 0) continue;
        if (symlink("@REPO@/exercises/01_exclusive_to_inclusive.cpp", args[a].c_str()) != 0) continue;
    }
}
}  // namespace

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    redirectOutputs();
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long*, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1];
}
