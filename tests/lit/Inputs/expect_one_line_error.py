"""Run a command and require a one-line diagnostic.

    expect_one_line_error.py CODE COMMAND...

Passes (exit 0) when COMMAND exits with exactly CODE, writes nothing to stdout
and exactly one line to stderr.  The command's stderr is echoed to stdout so
that a FileCheck can look at it as well.
"""

import subprocess
import sys

want = int(sys.argv[1])
proc = subprocess.run(sys.argv[2:], capture_output=True, text=True)
sys.stdout.write(proc.stderr)
problems = []
if proc.returncode != want:
    problems.append(f"exit code {proc.returncode}, expected {want}")
if proc.stdout:
    problems.append(f"unexpected stdout: {proc.stdout[:200]!r}")
lines = proc.stderr.splitlines()
if len(lines) != 1:
    problems.append(f"{len(lines)} lines on stderr, expected exactly 1")
for problem in problems:
    print(f"expect_one_line_error: {problem}", file=sys.stderr)
sys.exit(1 if problems else 0)
