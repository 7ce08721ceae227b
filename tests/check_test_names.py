#!/usr/bin/env python3
"""Every doctest case reaches ctest as one entry that runs it.

doctest_discover_tests lists the cases and registers one ctest entry per line of the list,
as a CMake list: a ';' in a case's name splits it into pieces whose --test-case filters
match no case, so ctest reports them passed while the case never runs. This check lists
the cases of the test program and fails on such a name; then it runs each registered
entry's filter through the program (--count) and fails on one that selects no case.

    check_test_names.py TEST_PROGRAM CTEST_FOLDER   (the folder of chunkscope_tests_tests-*.cmake)
"""
import glob
import os
import re
import subprocess
import sys


def main() -> int:
    program, folder = sys.argv[1], sys.argv[2]
    found = glob.glob(os.path.join(folder, "chunkscope_tests_tests-*.cmake"))
    if not found:
        print(f"check_test_names: no chunkscope_tests_tests-*.cmake in {folder}")
        return 1
    ctest_file = max(found, key=os.path.getmtime)
    listed = subprocess.run([program, "--list-test-cases"], capture_output=True, text=True, check=True).stdout
    names = [l for l in listed.splitlines() if l and not l.startswith("[doctest]") and not l.startswith("=====")]
    bad = [n for n in names if ";" in n]
    for n in bad:
        print(f"check_test_names: a ';' in the case name splits it in ctest, and it never runs: {n}")
    filters = re.findall(r"\[==\[(--test-case=.*?)\]==\]", open(ctest_file, encoding="utf-8").read())
    empty = []
    for f in filters:
        out = subprocess.run([program, f, "--count"], capture_output=True, text=True).stdout
        m = re.search(r"unskipped test cases passing the current filters: (\d+)", out)
        if not m or int(m.group(1)) == 0:
            empty.append(f)
    for f in empty:
        print(f"check_test_names: a ctest entry runs no case: {f}")
    print(f"check_test_names: {len(names)} cases, {len(filters)} ctest entries, {len(bad) + len(empty)} problem(s)")
    return 1 if bad or empty else 0


if __name__ == "__main__":
    sys.exit(main())
