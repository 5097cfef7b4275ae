"""Write tests/slow.txt: the tests that took 1 s or more in a timed run, which the quick check
(``python3 -m pytest -q -m "not slow and not browser"``, README) leaves out.

    python3 -m pytest -q -n 2 --junitxml=/tmp/all.xml
    python3 -m pytest -q -n 2 -m "not slow and not browser" --junitxml=/tmp/quick.xml
    python3 tests/slow.py /tmp/all.xml /tmp/quick.xml

(The second run finds the tests that are quick in a full run only because a slow one built
what they share, a module's compiles, say.)  
conftest.py marks each test listed ``slow``.  A test missing from the list only makes the quick
check slower; a name that no longer exists is ignored.  Regenerate it when the quick check
grows past a minute.
"""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIMIT = 1.0     # seconds: at or above this a test is slow


def node_id(classname: str, name: str) -> str:
    """``tests.inspect.test_insight`` + ``test_x[a]`` -> ``tests/inspect/test_insight.py::test_x[a]``
    (a class in the module keeps its ``::Class`` part)."""
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        if (HERE.parent / Path(*parts[:i])).with_suffix(".py").is_file():
            return "::".join(["/".join(parts[:i]) + ".py", *parts[i:], name])
    return f"{classname}::{name}"


def main(*xmls: str) -> int:
    slow = sorted({node_id(c.get("classname"), c.get("name"))
                   for xml in xmls for c in ET.parse(xml).getroot().iter("testcase")
                   if float(c.get("time") or 0) >= LIMIT})
    (HERE / "slow.txt").write_text("".join(f"{n}\n" for n in slow))
    print(f"{len(slow)} slow tests (>= {LIMIT:g} s) written to {HERE / 'slow.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
