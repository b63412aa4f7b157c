#!/usr/bin/env python3
"""Replaces one section of a Markdown report with stdin, keeping the others.

    report_section.py REPORT NAME TITLE < section.md

A section lies between `<!-- section NAME -->` and `<!-- /section NAME -->`;
a new one is appended. A missing report starts with `TITLE`. Lets the parts of
scripts/gpu-check.sh, run in separate calls, add up to one report.
"""
import os
import sys


def main():
    report, name, title = sys.argv[1:4]
    begin, end = f"<!-- section {name} -->", f"<!-- /section {name} -->"
    body = f"{begin}\n{sys.stdin.read().rstrip()}\n{end}\n"
    text = open(report).read() if os.path.exists(report) else f"{title}\n\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1].lstrip("\n")
        text = head + body + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + body
    os.makedirs(os.path.dirname(os.path.abspath(report)), exist_ok=True)
    with open(report, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
