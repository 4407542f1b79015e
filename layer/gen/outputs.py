"""What every generator in layer/gen does last: write its outputs, or with
--check only say which are stale (and exit 1)."""
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def write(outputs, script):
    """`outputs`: (path, text) pairs; `script`: the generator's name, for the message."""
    check = "--check" in sys.argv[1:]
    stale = []
    for path, text in outputs:
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            stale.append(os.path.relpath(path, ROOT))
            if not check:
                open(path, "w", encoding="utf-8").write(text)
    if check and stale:
        print(f"stale (run layer/gen/{script}): " + ", ".join(stale))
        sys.exit(1)
