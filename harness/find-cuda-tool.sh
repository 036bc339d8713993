#!/bin/sh
# find-cuda-tool.sh NAME: where a CUDA tool is, found the way the whole repository finds it.
#
#   1. NAME on the PATH;
#   2. $CUDA_HOME/bin/NAME, then $CUDA_PATH/bin/NAME (the variables CUDA installs set);
#   3. /usr/local/cuda/bin/NAME (where the toolkit installs, often not on the PATH);
#   4. for a tool other than nvcc: next to the nvcc found by 1-3 (compute-sanitizer, ncu).
#
# Prints the path and exits 0, or prints nothing and exits 1; 2 with a usage line
# when not given exactly one NAME. The Makefiles
# (NVCC, SANITIZER, NCU), harness/run-lessons.sh and harness/scanlab/env.py all
# look in this order, so `make run` and `make test` always use the same nvcc.
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: find-cuda-tool.sh NAME (nvcc, compute-sanitizer, ncu, ...)" >&2
  exit 2
fi
name=$1

if found=$(command -v "$name" 2>/dev/null) && [ -n "$found" ]; then
  echo "$found"
  exit 0
fi
for dir in ${CUDA_HOME:+"$CUDA_HOME/bin"} ${CUDA_PATH:+"$CUDA_PATH/bin"} /usr/local/cuda/bin; do
  if [ -x "$dir/$name" ]; then
    echo "$dir/$name"
    exit 0
  fi
done
if [ "$name" != nvcc ] && nvcc=$("$0" nvcc); then
  dir=$(dirname "$(readlink -f "$nvcc")")
  if [ -x "$dir/$name" ]; then
    echo "$dir/$name"
    exit 0
  fi
fi
exit 1
