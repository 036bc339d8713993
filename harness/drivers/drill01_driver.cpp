// Harness-owned driver for A05 drill 01 (exercises/01_exclusive_to_inclusive.cpp).
//
// The grader copies a submission to <workdir>/scanlab_submission.cpp and builds
// this file with -I<workdir>: the submission's functions come in through the
// #include below, with SCANLAB_GRADER defined so the submission's own main()
// drops out. This program calls ONE of the three functions on inputs the grader
// wrote and dumps the raw result; the grader computes the references and
// decides. Nothing here compares outputs with anything.
//
//   drill01_driver e2i|i2e|total INPUT OUTPUT
//
// INPUT (int64 words): n, in[n], incl[n], excl[n] (incl and excl are the
// grader's scans of in: each function gets the arrays its signature names).
// OUTPUT (int64 words): input_changed, changed_array (0 in, 1 incl, 2 excl),
// changed_index, guard_changed, guard_index, guard_value, then the result:
// n values for e2i and i2e, one value for total. Indices are relative to the
// array's first element, so -1 and n are the guard words either side.
// Every output slot and guard word starts as the poison value -999999999.
//
// Exit status: 0 ran (whatever the result); 90 the driver's own I/O failed;
// anything else (a signal, an exit inside the submission) is the submission's.

#define SCANLAB_GRADER 1
#include "scanlab_submission.cpp"

#include "drill_io.hpp"

#include <cstring>
#include <string>

namespace scanlab_driver {

using scanlab_io::Guarded;
using scanlab_io::kPoison;

struct Inputs {
    Guarded<long long> in, incl, excl;
    explicit Inputs(std::size_t n) : in(n, kPoison), incl(n, kPoison), excl(n, kPoison) {}
};

int run(const std::string& mode, const char* input_path, const char* output_path) {
    scanlab_io::Reader reader(scanlab_io::readWords(input_path), input_path);
    const std::size_t n = reader.size();
    Inputs inputs(n);
    for (std::size_t i = 0; i < n; ++i) inputs.in[i] = reader.next();
    for (std::size_t i = 0; i < n; ++i) inputs.incl[i] = reader.next();
    for (std::size_t i = 0; i < n; ++i) inputs.excl[i] = reader.next();
    const Inputs before = inputs;

    Guarded<long long> out(n, kPoison);
    long long total = kPoison;
    if (mode == "e2i") {
        exclusive_to_inclusive(inputs.in.data(), inputs.excl.data(), out.data(), n);
    } else if (mode == "i2e") {
        inclusive_to_exclusive(inputs.incl.data(), out.data(), n);
    } else if (mode == "total") {
        total = total_from_exclusive(inputs.in.data(), inputs.excl.data(), n);
    } else {
        std::fprintf(stderr, "drill01_driver: unknown mode '%s' (e2i, i2e, total)\n", mode.c_str());
        return scanlab_io::kExitDriverError;
    }

    std::vector<long long> words(6, 0);
    const Guarded<long long>* now[] = {&inputs.in, &inputs.incl, &inputs.excl};
    const Guarded<long long>* was[] = {&before.in, &before.incl, &before.excl};
    for (int a = 0; a < 3 && words[0] == 0; ++a) {
        for (std::size_t k = 0; k < now[a]->storage().size(); ++k) {
            if (now[a]->storage()[k] != was[a]->storage()[k]) {
                words[0] = 1;
                words[1] = a;
                words[2] = Guarded<long long>::relative(k);
                break;
            }
        }
    }
    if (mode != "total") {
        const std::vector<long long>& s = out.storage();
        for (std::size_t k = 0; k < s.size(); ++k) {
            const bool guard = k < scanlab_io::kGuard || k >= scanlab_io::kGuard + n;
            if (guard && s[k] != kPoison) {
                words[3] = 1;
                words[4] = Guarded<long long>::relative(k);
                words[5] = s[k];
                break;
            }
        }
        words.insert(words.end(), out.data(), out.data() + n);
    } else {
        words.push_back(total);
    }
    scanlab_io::writeWords(output_path, words);
    return 0;
}

}  // namespace scanlab_driver

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: drill01_driver e2i|i2e|total INPUT OUTPUT\n");
        return scanlab_io::kExitDriverError;
    }
    return scanlab_driver::run(argv[1], argv[2], argv[3]);
}
