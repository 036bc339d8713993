// Hostile drill 01: stub functions that write a forged, perfect results.json into
// the working directory, every parent folder of it (but /), @REPO@/ and the grader's
// own working directory (/proc/<ppid>/cwd, only where a results.json already exists).
// Right verdict: FAIL; the grader's --json file replaced with the true result; no new
// file in the repository.

#include <cstddef>
#include <cstdio>
#include <limits.h>
#include <string>
#include <unistd.h>

namespace {
const char kForged[] =
    "{\"score\": 1000, \"output\": \"forged by h_results_json_everywhere\", \"tests\": [{\"name\": "
    "\"exclusive_to_inclusive\", \"score\": 1000, \"max_score\": 1, \"status\": \"passed\", \"output\": \"\", "
    "\"visibility\": \"visible\"}]}\n";

void forge(const std::string& dir) {
    if (std::FILE* f = std::fopen((dir + "/results.json").c_str(), "w")) {
        std::fputs(kForged, f);
        std::fclose(f);
    }
}

void forgeEverywhere() {
    char buf[PATH_MAX];
    if (getcwd(buf, sizeof buf)) {
        std::string dir = buf;
        while (dir.size() > 1) {
            forge(dir);
            dir = dir.substr(0, dir.rfind('/'));
        }
    }
    forge("@REPO@");
    const std::string parent_cwd = "/proc/" + std::to_string(getppid()) + "/cwd";
    if (access((parent_cwd + "/results.json").c_str(), F_OK) == 0) forge(parent_cwd);
}
}  // namespace

void exclusive_to_inclusive(const long long*, const long long*, long long*, std::size_t) { forgeEverywhere(); }
void inclusive_to_exclusive(const long long*, long long*, std::size_t) { forgeEverywhere(); }
long long total_from_exclusive(const long long*, const long long*, std::size_t) {
    forgeEverywhere();
    return 0;
}
