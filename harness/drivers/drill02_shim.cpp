// Harness-owned adapter for A05 drill 02: compiled TOGETHER with the submission
// (it #includes it), inside the sandbox, into submission.o.
//
// Seg is the student's type, so the grader's driver (drill02_driver.cpp, a
// separate translation unit) cannot name it. This file only marshals: it turns
// plain integers into Seg values, calls the student's functions, and turns the
// results back into integers, through a fixed extern "C" ABI whose names all
// start with scanlab_. It checks, compares and records nothing; the driver dumps
// raw results and the grader (and, for the tree, drill02_judge.cpp) decides.
//
// tree_scan_inclusive is instantiated with scanlab_traced, an opaque element
// holding one 64-bit id the driver issued. Its op asks the driver (through
// scanlab_traced_combine) to combine two ids; the driver only logs the pair and
// hands back the next id (drill02_trace.hpp). Nothing is judged in this process:
// drill02_judge.cpp reads the log after the run and finds a value the driver never
// issued (forged) there. A default-constructed element holds id 0, which the
// driver never issues: "a T that never held an input".
//
// SCANLAB_SUBMISSION_FILE names the submission AFTER `g++ -E`: its macros are
// expanded and gone, so none of them can reach the code below (the line markers
// keep compiler messages pointing at the student's file). It is a string literal
// given on the compile line by harness/scanlab/drill_common.py (compile_command).

#include SCANLAB_SUBMISSION_FILE

// No header of our own: the submission arrives preprocessed, so a standard header
// included again here would define everything a second time.
using scanlab_size = decltype(sizeof 0);

extern "C" unsigned long long scanlab_traced_combine(unsigned long long a, unsigned long long b);

namespace {

struct scanlab_traced_access;

class scanlab_traced {
public:
    scanlab_traced() = default;

private:
    friend struct scanlab_traced_access;
    unsigned long long scanlab_id_ = 0;
};

struct scanlab_traced_access {
    static scanlab_traced make(unsigned long long id) {
        scanlab_traced t;
        t.scanlab_id_ = id;
        return t;
    }
    static unsigned long long id(const scanlab_traced& t) { return t.scanlab_id_; }
};

struct scanlab_traced_op {
    scanlab_traced operator()(const scanlab_traced& a, const scanlab_traced& b) const {
        return scanlab_traced_access::make(
            ::scanlab_traced_combine(scanlab_traced_access::id(a), scanlab_traced_access::id(b)));
    }
};

Seg scanlab_seg(long long flag, long long value) {
    Seg s{};
    s.flag = flag != 0;
    s.value = value;
    return s;
}

void scanlab_unseg(const Seg& s, long long* flag, long long* value) {
    *flag = s.flag ? 1 : 0;
    *value = s.value;
}

}  // namespace

extern "C" {

void scanlab_seg_identity(long long* flag, long long* value) { scanlab_unseg(::seg_identity(), flag, value); }

void scanlab_seg_combine(long long a_flag, long long a_value, long long b_flag, long long b_value, long long* flag,
                         long long* value) {
    scanlab_unseg(::seg_combine(scanlab_seg(a_flag, a_value), scanlab_seg(b_flag, b_value)), flag, value);
}

// in and out: `total` flags then `total` values each; the tile is [guard, guard + n).
void scanlab_segmented_scan_tile(long long* in, long long* out, scanlab_size total, scanlab_size guard, scanlab_size n,
                                 long long carry_flag, long long carry_value) {
    Seg* in_seg = new Seg[total]();
    Seg* out_seg = new Seg[total]();
    for (scanlab_size k = 0; k < total; ++k) {
        in_seg[k] = scanlab_seg(in[k], in[total + k]);
        out_seg[k] = scanlab_seg(out[k], out[total + k]);
    }
    ::segmented_scan_tile(in_seg + guard, out_seg + guard, n, scanlab_seg(carry_flag, carry_value));
    for (scanlab_size k = 0; k < total; ++k) {
        scanlab_unseg(in_seg[k], &in[k], &in[total + k]);
        scanlab_unseg(out_seg[k], &out[k], &out[total + k]);
    }
    delete[] in_seg;
    delete[] out_seg;
}

// ids: `total` ids; the scan runs on [guard, guard + n).
void scanlab_tree_scan_inclusive(unsigned long long* ids, scanlab_size total, scanlab_size guard, scanlab_size n,
                                 unsigned long long identity) {
    scanlab_traced* x = new scanlab_traced[total];
    for (scanlab_size k = 0; k < total; ++k) x[k] = scanlab_traced_access::make(ids[k]);
    scanlab_traced_op op;  // an lvalue: a submission may take Op by value, by reference or by forwarding reference
    ::tree_scan_inclusive(x + guard, n, op, scanlab_traced_access::make(identity));
    for (scanlab_size k = 0; k < total; ++k) ids[k] = scanlab_traced_access::id(x[k]);
    delete[] x;
}

}  // extern "C"
