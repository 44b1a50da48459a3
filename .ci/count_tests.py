"""Counts test cases across CI builds and prints the closing line "N passed, M failed".

Arguments come in pairs: a folder of GoogleTest XML reports and the Meson testlog.json of the same
build ("-" for a stage that has reports but no Meson run, such as the fuzzer). Each GoogleTest case counts once. A test program that failed without a report saying so
(a crash, a sanitizer abort, a timeout) counts as one failed case, so nothing fails silently.
"""
import json
import os
import sys
import xml.etree.ElementTree as ElementTree


def count_build(xml_dir, testlog):
    passed = failed = 0
    reported_failures = {}
    for name in sorted(os.listdir(xml_dir)) if os.path.isdir(xml_dir) else []:
        if not name.endswith(".xml"):
            continue
        cases = ElementTree.parse(os.path.join(xml_dir, name)).getroot().iter("testcase")
        bad = 0
        for case in cases:
            if case.get("result", "completed") == "skipped" or case.get("status") == "notrun":
                continue
            if case.find("failure") is not None:
                bad += 1
            else:
                passed += 1
        failed += bad
        reported_failures[os.path.splitext(name)[0]] = bad
    if testlog == "-":
        return passed, failed
    try:
        with open(testlog) as log:
            runs = [json.loads(line) for line in log if line.strip()]
    except OSError:
        runs = []
        failed += 1  # the build never got as far as running tests
    for run in runs:
        # Meson names the program's command line "command"; its first word is the binary whose
        # report (binary.xml) says how many cases it ran.
        command = run.get("command")
        binary = os.path.basename(command[0]) if command else run["name"]
        if run["result"] not in ("OK", "EXPECTEDFAIL", "SKIP"):
            if reported_failures.get(binary, 0) == 0:
                failed += 1
                print(f"  {run['name']}: {run['result']} with no failing case reported")
        elif binary not in reported_failures:
            passed += 1  # a passing test program that is not GoogleTest
    return passed, failed


def main(args):
    passed = failed = 0
    for xml_dir, testlog in zip(args[0::2], args[1::2]):
        p, f = count_build(xml_dir, testlog)
        print(f"  {os.path.basename(xml_dir)}: {p} passed, {f} failed")
        passed, failed = passed + p, failed + f
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
