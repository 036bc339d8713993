// File I/O for the drill drivers (harness/drivers/drill0N_driver.cpp).
//
// Inputs and outputs are raw little-endian int64 words; harness/scanlab/
// grade_drills.py writes the inputs, reads the outputs and decides everything.
// Nothing a submission prints is read: the drivers talk to the grader through
// these files only. Driver-side failures (a file that cannot be read or
// written, a malformed input) exit with status 90 and one line on stderr, so
// the grader can tell them from a crash inside the submission.

#ifndef SCANLAB_DRILL_IO_HPP
#define SCANLAB_DRILL_IO_HPP

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace scanlab_io {

constexpr int kExitDriverError = 90;

// Filled into every output slot and every guard word before the submission
// runs: a slot that reads back as this was never written.
constexpr long long kPoison = -999999999LL;

// Guard words on each side of every array handed to the submission.
constexpr std::size_t kGuard = 8;

[[noreturn]] inline void fail(const char* what, const char* path) {
    std::fprintf(stderr, "drill driver: %s %s\n", what, path);
    std::exit(kExitDriverError);
}

inline std::vector<long long> readWords(const char* path) {
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) fail("cannot open", path);
    std::vector<long long> words;
    long long buffer[4096];
    std::size_t got = 0;
    while ((got = std::fread(buffer, sizeof(long long), 4096, f)) > 0) words.insert(words.end(), buffer, buffer + got);
    std::fclose(f);
    return words;
}

inline void writeWords(const char* path, const std::vector<long long>& words) {
    std::FILE* f = std::fopen(path, "wb");
    if (f == nullptr) fail("cannot create", path);
    const bool ok = std::fwrite(words.data(), sizeof(long long), words.size(), f) == words.size();
    if (std::fclose(f) != 0 || !ok) fail("cannot write", path);
}

// Reads words in order from an input file; running past the end is a driver error.
class Reader {
public:
    Reader(std::vector<long long> words, const char* path) : words_(std::move(words)), path_(path) {}
    long long next() {
        if (at_ >= words_.size()) fail("input file is too short:", path_);
        return words_[at_++];
    }
    std::size_t size() {
        const long long v = next();
        if (v < 0) fail("input file holds a negative size:", path_);
        return std::size_t(v);
    }

private:
    std::vector<long long> words_;
    const char* path_;
    std::size_t at_ = 0;
};

// An array of n elements with kGuard guard elements on each side. data() is
// a valid pointer even for n == 0, so code that reads x[n - 1] for n == 0 reads
// a guard, not unmapped memory.
template <typename T>
class Guarded {
public:
    Guarded(std::size_t n, const T& fill) : n_(n), storage_(n + 2 * kGuard, fill) {}
    T* data() { return storage_.data() + kGuard; }
    const T* data() const { return storage_.data() + kGuard; }
    std::size_t size() const { return n_; }
    T& operator[](std::size_t i) { return data()[i]; }
    const T& operator[](std::size_t i) const { return data()[i]; }
    // The whole storage, guards included, index 0 = relative index -kGuard.
    std::vector<T>& storage() { return storage_; }
    const std::vector<T>& storage() const { return storage_; }
    static long long relative(std::size_t storage_index) { return (long long)storage_index - (long long)kGuard; }

private:
    std::size_t n_;
    std::vector<T> storage_;
};

}  // namespace scanlab_io

#endif  // SCANLAB_DRILL_IO_HPP
