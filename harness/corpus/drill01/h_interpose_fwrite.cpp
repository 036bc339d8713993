// Hostile drill 01: inclusive_to_exclusive shifts inside its input incl (values of
// excl right, incl changed), and the file defines its own extern "C" fwrite and
// write, which the linker prefers to libc's, to zero the "input changed" words of
// every output the driver writes. Right verdict: FAIL (the side-effect check is made
// where the submission cannot reach; its libc overrides must not bind the driver).

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace {
// Today's driver output starts with input_changed, changed_array, changed_index.
std::vector<char> scrubbed(const void* data, std::size_t bytes) {
    std::vector<char> copy(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    if (bytes >= 6 * sizeof(long long) && bytes % sizeof(long long) == 0) {
        std::memset(copy.data(), 0, 3 * sizeof(long long));
    }
    return copy;
}
}  // namespace

extern "C" std::size_t fwrite(const void* data, std::size_t size, std::size_t count, std::FILE* f) {
    const std::vector<char> copy = scrubbed(data, size * count);
    return fwrite_unlocked(copy.data(), size, count, f);
}

extern "C" ssize_t write(int fd, const void* data, std::size_t bytes) {
    if (fd <= 2) return syscall(SYS_write, fd, data, bytes);
    const std::vector<char> copy = scrubbed(data, bytes);
    return syscall(SYS_write, fd, copy.data(), bytes);
}

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    long long* scratch = const_cast<long long*>(incl);
    for (std::size_t i = n; i-- > 1;) scratch[i] = scratch[i - 1];
    if (n > 0) scratch[0] = 0;
    for (std::size_t i = 0; i < n; ++i) excl[i] = scratch[i];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
