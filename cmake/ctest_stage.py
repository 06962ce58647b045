#!/usr/bin/env python3
"""Judges one ctest stage of the test command from ctest's JUnit report.

    python3 cmake/ctest_stage.py STAGE JUNIT_XML [SUMMARY]

Prints how many tests the stage ran, passed, failed and skipped, and fails (exit 1) when
  - the report has no test at all, or a test named *_NOT_BUILT (an executable ctest knows of but
    the stage's build never made),
  - a test failed or did not run,
  - a test was skipped that tests/test_stages.txt does not allow for this stage,
  - fewer tests ran than tests/test_stages.txt expects of this stage.
tests/test_stages.txt holds, per stage, the count it expects (raise it when tests are added) and
the skips it allows, each with its reason. With SUMMARY, the stage's failures (each failed test
with the end of its output) are appended to that file too, so that the test command can repeat
them at its end, after the output of everything else.
"""

import pathlib
import re
import sys
import xml.etree.ElementTree as ElementTree


SUMMARY_LINES_PER_TEST = 40
summary = []


def fail(message):
    print(f"=== nvmekit: FAILED: {message}", file=sys.stderr)
    summary.append(f"=== nvmekit: FAILED: {message}")
    return 1


def output_tail(case):
    """The last lines of a test case's output in the report."""
    text = "".join((element.text or "") for element in case.iter("system-out"))
    lines = text.rstrip().splitlines()[-SUMMARY_LINES_PER_TEST:]
    return [f"    {line}" for line in lines]


def read_stages(path):
    """{stage: (expected count, [(compiled test-name pattern, reason)])} from test_stages.txt."""
    stages = {}
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split(None, 2)
        if words[0] == "stage" and len(words) == 3:
            name, count = words[1], words[2]
            if not count.isdigit():
                raise SystemExit(f"{path}:{number}: the expected count of {name} is not a number")
            stages.setdefault(name, [0, []])[0] = int(count)
        elif words[0] == "skip" and len(words) == 3:
            name, pattern = words[1], words[2]
            reason = raw.split("#", 1)[1].strip() if "#" in raw else ""
            if not reason:
                raise SystemExit(f"{path}:{number}: an allowed skip needs its reason after '#'")
            for stage in name.split(","):
                stages.setdefault(stage, [0, []])[1].append((re.compile(pattern), reason))
        else:
            raise SystemExit(f"{path}:{number}: expected 'stage NAME COUNT' or 'skip STAGES REGEX # reason'")
    return stages


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    stage, report = sys.argv[1], pathlib.Path(sys.argv[2])
    summary_path = pathlib.Path(sys.argv[3]) if len(sys.argv) == 4 else None
    status = judge(stage, report)
    if summary and summary_path is not None:
        with summary_path.open("a") as out:
            out.write("\n".join(summary) + "\n")
    return status


def judge(stage, report):
    stages = read_stages(pathlib.Path(__file__).resolve().parent.parent / "tests" / "test_stages.txt")
    if stage not in stages:
        return fail(f"stage {stage} has no line in tests/test_stages.txt")
    expected, allowed_skips = stages[stage]
    if not report.exists():
        return fail(f"{stage}: ctest wrote no report ({report})")

    passed, failed, skipped, not_built = [], [], [], []
    failed_cases = []
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        name = case.get("name", "")
        status = case.get("status", "")
        if name.endswith("_NOT_BUILT"):
            not_built.append(name)
        elif case.find("failure") is not None or status == "fail":
            failed.append(name)
            failed_cases.append(case)
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped.append(name)
        else:
            passed.append(name)

    ran = len(passed) + len(failed)
    print(f"=== nvmekit: {stage}: {ran + len(skipped)} tests: {len(passed)} passed, {len(failed)} failed, "
          f"{len(skipped)} skipped (at least {expected} expected to run)")
    status = 0
    if not_built:
        status = fail(f"{stage}: ctest knows tests whose executable the stage did not build: "
                      + ", ".join(sorted(not_built)))
    if failed:
        status = fail(f"{stage}: {len(failed)} failed: " + ", ".join(sorted(failed)[:20]))
        for case in failed_cases[:5]:
            summary.append(f"--- {stage}: {case.get('name', '')}, the end of its output:")
            summary.extend(output_tail(case))
    unexpected = []
    for name in skipped:
        reasons = [reason for pattern, reason in allowed_skips if pattern.search(name)]
        if not reasons:
            unexpected.append(name)
    if unexpected:
        status = fail(f"{stage}: skipped, and not allowed by tests/test_stages.txt: "
                      + ", ".join(sorted(unexpected)))
    if ran == 0:
        status = fail(f"{stage}: ran no test")
    elif len(passed) < expected:
        status = fail(f"{stage}: {len(passed)} tests passed, fewer than the {expected} "
                      "tests/test_stages.txt expects")
    elif len(passed) > expected:
        print(f"nvmekit: {stage}: {len(passed) - expected} more than tests/test_stages.txt expects; "
              "raise its count to keep them")
    return status


if __name__ == "__main__":
    sys.exit(main())
