# scan-lab: parallel prefix sum, taught on CUDA, HIP and Triton.
#
#   make run                              build and run every lesson program this machine can run
#   make test                             the pytest harness (makes .venv/ first if pytest is missing)
#   make test-full                        make test and the exhaustive tests it skips (before a release)
#   make help                             this list
#
#   make cuda [SM_ARCH="sm_75 sm_90"]     build the CUDA programs and their traced twins (default: T4 and Hopper)
#   make run-cuda                         build and run them
#   make hip  [GPU_ARCH=gfx942]           build the HIP programs for an AMD GPU
#   make run-hip                          build and run them
#   make sanitize                         compute-sanitizer racecheck + initcheck on Day 31
#   make exercises                        build the exercises (the drills' starters)
#   make solutions                        build their solutions
#   make autograder [EXERCISES="..."]     build/autograder.zip for Gradescope (no solutions in it)
#   make student-release REPO=org/name    build/student-release/: what students get, no answers, to publish as org/name
#   make clean                            remove build/
#
# The student release (make student-release) has no solutions/, harness/gradescope/ or
# harness/student-release.py: there make help leaves out solutions, autograder and student-release,
# and each says in one line that this copy lacks what it needs and stops (its recipe's status 1,
# which make reports as its 2), under make -n too.
#
# Every binary lands under build/, never next to its source. nvcc and compute-sanitizer are
# found where the harness finds them (harness/find-cuda-tool.sh: the PATH, $CUDA_HOME/bin,
# $CUDA_PATH/bin, /usr/local/cuda/bin); NVCC=... or SANITIZER=... picks another.

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD ?= $(TOP)/build
FIND_CUDA := $(TOP)/harness/find-cuda-tool.sh
ifeq ($(origin NVCC),undefined)
NVCC := $(or $(shell $(FIND_CUDA) nvcc),nvcc)
endif
HIPCC ?= hipcc
SM_ARCH ?= sm_75 sm_90
GPU_ARCH ?= gfx942
ifeq ($(origin SANITIZER),undefined)
SANITIZER := $(or $(shell $(FIND_CUDA) compute-sanitizer),compute-sanitizer)
endif

export BUILD NVCC HIPCC SM_ARCH GPU_ARCH

# sm_75 sm_90 -> native code for each, plus PTX of the newest (numerically: sm_100 > sm_90)
# so later GPUs can JIT it.
newest_sm := sm_$(lastword $(shell printf '%s\n' $(SM_ARCH:sm_%=%) | sort -n))
GENCODE := $(foreach a,$(SM_ARCH),-gencode arch=compute_$(a:sm_%=%),code=$(a)) \
           -gencode arch=compute_$(newest_sm:sm_%=%),code=compute_$(newest_sm:sm_%=%)
NVCCFLAGS ?= -std=c++17 -O3 -lineinfo -Xcompiler -Wall,-Wextra

DAY31 := $(BUILD)/day31-scan/scan
DAY31_TRACE := $(BUILD)/day31-scan/trace

.PHONY: all help run run-cuda run-hip cuda hip test sanitize exercises solutions autograder student-release clean test-full \
        need-nvcc FORCE

all: cuda

# What a target needs that the student release leaves out, and the targets this copy lacks it for.
NEEDS_solutions := solutions/Makefile
NEEDS_autograder := harness/gradescope/make_autograder.py
NEEDS_student-release := harness/student-release.py
LACKING := $(foreach t,solutions autograder student-release,$(if $(wildcard $(TOP)/$(NEEDS_$(t))),,$(t)))
# $(call needs,WHY): a recipe's first line: where this copy has no $(NEEDS_<target>), one line and
# status 1. `+` runs it under make -n as well, so a dry run is refused like the real one.
needs = +@test -e $(TOP)/$(NEEDS_$@) || { echo "make $@: $(1)" >&2; exit 1; }

help:
	@sed -n 's/^#   make /make /p' $(TOP)/Makefile $(foreach t,$(LACKING),| grep -v '^make $(t) ')

# Says which nvcc the build uses, or, without one, where it looked (one line, status 1).
need-nvcc:
	@command -v $(NVCC) >/dev/null 2>&1 || { echo "make: nvcc not found (not on the PATH, nor in \$$CUDA_HOME/bin, \$$CUDA_PATH/bin or /usr/local/cuda/bin): install the CUDA toolkit (SETUP.md) or pass NVCC=/path/to/nvcc" >&2; exit 1; }
	@echo "make: nvcc is $(NVCC)"

# A stamp holding the flags: changing SM_ARCH or NVCCFLAGS rebuilds.
$(BUILD)/.nvcc-flags: FORCE
	@mkdir -p $(@D)
	@echo '$(NVCC) $(NVCCFLAGS) $(GENCODE)' | cmp -s - $@ || echo '$(NVCC) $(NVCCFLAGS) $(GENCODE)' > $@

# The lesson, and its traced twin (trace.cu: the same kernels recording each step).
$(BUILD)/day31-scan/%: day31-scan/%.cu $(BUILD)/.nvcc-flags | need-nvcc
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) $(GENCODE) -o $@ $<

cuda: $(DAY31) $(DAY31_TRACE)
	$(MAKE) -C a05-scan cuda

hip:
	$(MAKE) -C a05-scan hip

run-cuda: cuda
	$(DAY31)
	$(MAKE) -C a05-scan run-cuda

run-hip:
	$(MAKE) -C a05-scan run-hip

# Picks what this machine can run; says in one line what it skipped and why.
run:
	@$(TOP)/harness/run-lessons.sh

# The harness runs make in clones and fresh checkouts: it gets none of the variables
# this Makefile exports (BUILD would send their builds here).
test:
	@env -u BUILD -u SM_ARCH -u GPU_ARCH -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $(TOP)/harness/run-tests.sh

# make test and the exhaustive tests (marked `full`: more knob combinations of programs the
# default suite builds once), which make test skips saying so; before a release.
test-full:
	@env -u BUILD -u SM_ARCH -u GPU_ARCH -u MAKEFLAGS -u MFLAGS -u MAKELEVEL SCANLAB_FULL=1 $(TOP)/harness/run-tests.sh

# Small sizes: racecheck is slow and the race shows at any size above one warp.
# The first run is meant to report hazards (the in-place race); the other two must
# be clean, and --error-exitcode makes make stop if they are not.
sanitize:
	@command -v $(SANITIZER) >/dev/null 2>&1 || { echo "make sanitize: compute-sanitizer not found (not on the PATH, nor in the CUDA toolkit's bin/ next to nvcc): it ships with the CUDA toolkit; pass SANITIZER=/path/to/compute-sanitizer" >&2; exit 1; }
	@$(MAKE) --no-print-directory $(DAY31)
	$(SANITIZER) --tool racecheck --racecheck-report all $(DAY31) --n 4096 --block 256 --kernel in-place
	$(SANITIZER) --tool racecheck --racecheck-report all --error-exitcode 99 $(DAY31) --n 4096 --block 64,256,1024 --kernel double-buffer,exclusive
	$(SANITIZER) --tool initcheck --error-exitcode 99 $(DAY31) --n 4099 --block 64,256,1024 --kernel double-buffer,exclusive

exercises:
	$(MAKE) -C exercises

solutions:
	$(call needs,this copy has no solutions/ (the student release leaves the answers out); build them in the course repository)
	$(MAKE) -C solutions

# Gradescope's autograder zip: harness and starters, never solutions/ (harness/README.md, "Gradescope").
# EXERCISES="day31 drill01 drill02 drill03 drill04": what it grades (default: the course, no stretch drill).
autograder:
	$(call needs,this copy has no harness/gradescope/ (the student release leaves the instructor's autograder out); build the zip in the course repository)
	python3 $(TOP)/harness/gradescope/make_autograder.py --out $(BUILD)/autograder.zip $(if $(EXERCISES),--exercises "$(EXERCISES)")

# The student release: lessons, starters and the self-check harness, never solutions/ or the
# corpus (harness/student-release.py lists what is in and out, and why). REPO=OWNER/NAME, the
# repository the release is published as, replaces COURSE-ORG/scan-lab in it; a malformed one
# stops it with status 2 (make reports 2 as well).
student-release:
	$(call needs,this copy is a release already; build one from the course repository)
	python3 $(TOP)/harness/student-release.py $(if $(REPO),--repo '$(REPO)') $(BUILD)/student-release

clean:
	rm -rf $(BUILD)
