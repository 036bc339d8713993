"""scan-lab's test and grading harness: building, running, parsing and grading.

Exit statuses every lesson program shares (see README.md):
"""

EXIT_PASS = 0  # every gated check passed
EXIT_FAIL = 1  # a gated check failed, or a GPU call failed
EXIT_USAGE = 2  # bad command line
EXIT_NO_GPU = 3  # no usable GPU: no device, driver missing or too old, no binary for this GPU
