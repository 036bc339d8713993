// Harness-owned driver for A05 drill 01 (exercises/01_exclusive_to_inclusive.cpp).
//
// The grader compiles this file on its own (trusted, cached outside the
// repository) and, inside a sandbox, links it with the submission compiled
// alone as submission.o: the submission's macros and includes never reach this
// code, and everything here but main has internal linkage. The three functions
// are declared below with the starter's exact signatures; a submission that
// changes one gets a link error the grader turns into one clear line.
//
//   drill01_driver e2i|i2e|total OUTPUT INPUT...
//
// Each INPUT is one case (int64 words), only what the function reads:
//   e2i:   n, in[n], excl[n]
//   i2e:   n, incl[n]
//   total: n, in[n], excl[n]
// OUTPUT (int64 words), per case: its word count, then the raw storage, kGuard
// guard words either side included, of every array handed to the function, in
// the order of its parameters, read AFTER the call; for total, then the
// returned value.
//   e2i:   in, excl, incl (the output)
//   i2e:   incl, excl (the output)
//   total: in, excl, total
// Guards and output slots start as the poison -999999999. This program
// compares nothing: the grader knows what it wrote and judges every word.
//
// Exit status: 0 ran (whatever the result); 90 the driver's own I/O failed;
// 91 out of memory; anything else (a signal, an exit inside the submission) is
// the submission's.

#include "drill_io.hpp"

#include <cstddef>
#include <cstring>

// The starter's signatures (exercises/01_exclusive_to_inclusive.cpp).
void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n);
void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n);
long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n);

namespace {

using scanlab_io::Guarded;

void readInto(scanlab_io::Reader& reader, Guarded& array, std::size_t n) { reader.read(array.data(), n); }

// One case's dump: the arrays the function was given, then what it wrote (its output array or
// its total), each array with its guard words, as pieces (no copy into one vector).
std::vector<std::vector<long long>> run(const char* mode, const char* input_path) {
    scanlab_io::Reader reader(scanlab_io::readWords(input_path), input_path);
    const std::size_t n = reader.size();
    std::vector<std::vector<long long>> dump;
    if (std::strcmp(mode, "e2i") == 0) {
        Guarded in(n), excl(n), incl(n);
        readInto(reader, in, n);
        readInto(reader, excl, n);
        ::exclusive_to_inclusive(in.data(), excl.data(), incl.data(), n);
        for (Guarded* a : {&in, &excl, &incl}) dump.push_back(a->take());
    } else if (std::strcmp(mode, "i2e") == 0) {
        Guarded incl(n), excl(n);
        readInto(reader, incl, n);
        ::inclusive_to_exclusive(incl.data(), excl.data(), n);
        for (Guarded* a : {&incl, &excl}) dump.push_back(a->take());
    } else if (std::strcmp(mode, "total") == 0) {
        Guarded in(n), excl(n);
        readInto(reader, in, n);
        readInto(reader, excl, n);
        const long long total = ::total_from_exclusive(in.data(), excl.data(), n);
        for (Guarded* a : {&in, &excl}) dump.push_back(a->take());
        dump.push_back({total});
    } else {
        scanlab_io::fail("unknown mode (e2i, i2e, total):", mode);
    }
    return dump;
}

}  // namespace

int main(int argc, char** argv) {
    scanlab_io::installOutOfMemoryHandler();
    if (argc < 4) scanlab_io::fail("usage: drill01_driver e2i|i2e|total OUTPUT INPUT...; got", argc > 0 ? argv[0] : "");
    scanlab_io::Results results;
    for (int k = 3; k < argc; ++k) results.add(run(argv[1], argv[k]));
    results.writeAndExit(argv[2]);
}
