// The trace of tree_scan_inclusive that drill 02's driver writes and its judge reads
// (harness/drivers/drill02_driver.cpp, harness/drivers/drill02_judge.cpp): one place
// for the id rule and the layout, so the two cannot drift apart.
//
// Nothing here is secret, and nothing needs to be. The driver shares its process with
// the submission, so anything it knows the submission can read; the judge, a separate
// program in a separate sandbox, recomputes every claim from the log alone.
//
// Ids. The element the shim hands tree_scan_inclusive holds one 64-bit word; the
// driver turns it into an INDEX by a fixed public rule:
//   0                      a default-constructed element ("never held an input")
//   1 .. total             the storage slot k - 1 (total = n + 2 kGuard): the inputs
//                          and, either side, the guards
//   total + 1              the identity
//   total + 2 + j          the result of the j-th combine (j from 0)
//   kUntraced              a result made after the log was full
// An element stores encode(index, tag): a public bijection of index | tag << 32, where
// the tag is the case's place in its run plus one. Nothing depends on the encoding
// being hard to guess. It is there so that memory that never held a T, a flipped
// bit or an id kept from an earlier case decodes to kForged ("a value the grader
// never issued"), which tells a student what went wrong. A submission that encodes a
// valid index itself only gets a copy of a value that already exists, and copying a
// value is something any scan is allowed to do.
//
// The dump of one case (int64 words; the driver writes it through drill_io.hpp's Results):
//   n, total, combines, log_len, log[log_len], final[total]
// combines counts every call of the op, log_len only the logged ones (at most
// kTraceCap; fewer means combines == log_len). log[j] is the j-th combine's operand
// indices, a | b << 32. final[k] is the index slot k holds when the submission returns.

#ifndef SCANLAB_DRILL02_TRACE_HPP
#define SCANLAB_DRILL02_TRACE_HPP

#include <cstdint>

namespace {
namespace scanlab_trace {

constexpr std::uint32_t kUnset = 0;
constexpr std::uint32_t kUntraced = 0xFFFFFFFEu;
constexpr std::uint32_t kForged = 0xFFFFFFFFu;

// Combines logged per case. 8 bytes each: a full log is 32 MiB, well under the
// sandbox's 64 MiB per file; the largest graded size (65537) needs at most 1.4 million
// (the work bound). In a run of several cases the budget is for the whole run
// (drill02_driver.cpp says what happens when it runs out).
constexpr std::uint64_t kTraceCap = std::uint64_t(1) << 22;

constexpr std::uint64_t kMix1 = 0xBF58476D1CE4E5B9ull;  // splitmix64's finaliser: odd multipliers,
constexpr std::uint64_t kMix2 = 0x94D049BB133111EBull;  // so every step can be undone

constexpr std::uint64_t inverseOdd(std::uint64_t a) {
    std::uint64_t x = a;  // Newton's iteration doubles the correct low bits: 3, 6, 12, 24, 48, 96
    for (int k = 0; k < 5; ++k) x *= 2 - a * x;
    return x;
}

inline std::uint64_t unshift(std::uint64_t z, int s) {
    std::uint64_t x = z;
    for (int k = 0; k < 64; k += s) x = z ^ (x >> s);
    return x;
}

inline std::uint64_t encode(std::uint32_t index, std::uint32_t tag) {
    std::uint64_t z = std::uint64_t(index) | std::uint64_t(tag) << 32;
    z = (z ^ (z >> 30)) * kMix1;
    z = (z ^ (z >> 27)) * kMix2;
    return z ^ (z >> 31);
}

// The index an element holds; kForged unless it is 0 or encode(index, tag) with index != 0.
inline std::uint32_t decode(std::uint64_t id, std::uint32_t tag) {
    if (id == 0) return kUnset;
    std::uint64_t z = unshift(id, 31) * inverseOdd(kMix2);
    z = unshift(z, 27) * inverseOdd(kMix1);
    z = unshift(z, 30);
    const std::uint32_t index = std::uint32_t(z);
    return (z >> 32) == tag && index != kUnset ? index : kForged;
}

}  // namespace scanlab_trace
}  // namespace

#endif  // SCANLAB_DRILL02_TRACE_HPP
