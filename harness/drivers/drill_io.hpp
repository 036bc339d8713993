// File I/O for the drill drivers (harness/drivers/drill0N_driver.cpp) and drill 02's judge.
//
// The drivers are the grader's trusted half of each drill binary: the
// submission is compiled on its own (its macros, pragmas and includes never
// reach this code) and linked in. Everything here has internal linkage (an
// anonymous namespace), so no function of a submission can share a name with it.
//
// Inputs and outputs are raw little-endian int64 words; harness/scanlab/
// grade_drills.py writes the inputs, reads the outputs and decides everything.
// One run is one function on one or more cases (`driver MODE OUTPUT CASE...`):
// a process per case would cost more in sandbox start-up than the cases take.
// The drivers call the student's function, then dump the raw storage of every
// array they handed it (guard words included) and compare nothing. Nothing a
// submission prints is read. Driver-side failures (a file that cannot be read
// or written, a malformed input) exit with status 90 and one line on stderr.
// The functions are inline so that a program using only some of them
// (harness/drivers/drill02_judge.cpp) compiles without unused-function warnings.

#ifndef SCANLAB_DRILL_IO_HPP
#define SCANLAB_DRILL_IO_HPP

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace {
namespace scanlab_io {

constexpr int kExitDriverError = 90;
constexpr int kExitOutOfMemory = 91;  // with the marker line below: harness/scanlab/sandbox.py reports the limit

// Filled into every output slot and every guard word before the submission
// runs: a slot that reads back as this was never written.
constexpr long long kPoison = -999999999LL;

// Guard words on each side of every array handed to the submission.
constexpr std::size_t kGuard = 8;

[[noreturn]] inline void fail(const char* what, const char* path) {
    std::fprintf(stderr, "drill driver: %s %s\n", what, path);
    std::fflush(stderr);
    std::_Exit(kExitDriverError);
}

// Installed first thing in main: an allocation past the memory limit (the
// student's or ours) ends the run with a status the grader reads as that limit.
[[noreturn]] inline void outOfMemory() {
    std::fputs("scanlab: out of memory\n", stderr);
    std::_Exit(kExitOutOfMemory);
}

inline void installOutOfMemoryHandler() { std::set_new_handler(outOfMemory); }

inline std::vector<long long> readWords(const char* path) {
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) fail("cannot open", path);
    // One read of the whole file into storage of its size (growing a vector chunk by chunk
    // costs more in page faults than the reading); whatever follows (a file that grew) is read too.
    std::vector<long long> words;
    long size = -1;
    if (std::fseek(f, 0, SEEK_END) == 0) size = std::ftell(f);
    std::rewind(f);
    if (size > 0) {
        words.resize(std::size_t(size) / sizeof(long long));
        words.resize(std::fread(words.data(), sizeof(long long), words.size(), f));
    }
    long long buffer[4096];
    std::size_t got = 0;
    while ((got = std::fread(buffer, sizeof(long long), 4096, f)) > 0) words.insert(words.end(), buffer, buffer + got);
    std::fclose(f);
    return words;
}

// The dumps of every case of one run, written at once when the last case is
// done, and then the process ends: no atexit handler or static destructor of
// the submission runs after the results exist (one could rewrite them), and a
// run that dies part-way leaves no output file at all (the grader then runs
// each case alone to find the one that failed). The file holds, per case in
// argument order, the dump's word count and then its words. "wx" after
// remove(): a link planted at the path is never followed.
class Results {
public:
    void add(std::vector<long long> dump) {
        dumps_.emplace_back();
        dumps_.back().push_back(std::move(dump));
    }
    // One case's dump given as pieces written one after another (no copy into one vector).
    void add(std::vector<std::vector<long long>> pieces) { dumps_.push_back(std::move(pieces)); }

    [[noreturn]] void writeAndExit(const char* path) const {
        std::remove(path);
        std::FILE* f = std::fopen(path, "wbx");
        if (f == nullptr) fail("cannot create", path);
        bool ok = true;
        for (const std::vector<std::vector<long long>>& pieces : dumps_) {
            long long count = 0;
            for (const std::vector<long long>& piece : pieces) count += (long long)piece.size();
            ok = ok && std::fwrite(&count, sizeof count, 1, f) == 1;
            for (const std::vector<long long>& piece : pieces)
                ok = ok && std::fwrite(piece.data(), sizeof(long long), piece.size(), f) == piece.size();
        }
        if (std::fclose(f) != 0 || !ok) fail("cannot write", path);
        std::fflush(stdout);
        std::fflush(stderr);
        std::_Exit(0);
    }

private:
    std::vector<std::vector<std::vector<long long>>> dumps_;  // per case, its pieces
};

// Reads words in order from an input file; running past the end is a driver error.
class Reader {
public:
    Reader(std::vector<long long> words, const char* path) : words_(std::move(words)), path_(path) {}
    long long next() {
        if (at_ >= words_.size()) fail("input file is too short:", path_);
        return words_[at_++];
    }
    void read(long long* out, std::size_t n) {  // the next n words, at once
        if (words_.size() - at_ < n) fail("input file is too short:", path_);
        std::copy(words_.begin() + std::ptrdiff_t(at_), words_.begin() + std::ptrdiff_t(at_ + n), out);
        at_ += n;
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

// An array of n words with kGuard guard words on each side, all poisoned. data()
// is a valid pointer even for n == 0, so code that reads x[n - 1] for n == 0
// reads a guard, not unmapped memory.
class Guarded {
public:
    explicit Guarded(std::size_t n) : storage_(n + 2 * kGuard, kPoison) {}
    long long* data() { return storage_.data() + kGuard; }
    long long& operator[](std::size_t i) { return data()[i]; }
    // The whole storage, guards included: what the grader compares.
    const std::vector<long long>& storage() const { return storage_; }
    std::vector<long long> take() { return std::move(storage_); }  // the storage, for the results

private:
    std::vector<long long> storage_;
};

inline void append(std::vector<long long>& words, const std::vector<long long>& more) {
    words.insert(words.end(), more.begin(), more.end());
}

}  // namespace scanlab_io
}  // namespace

#endif  // SCANLAB_DRILL_IO_HPP
