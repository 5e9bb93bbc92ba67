"""Imports torch in a process whose LD_PRELOAD holds Weft's libnccl.so.2 (the path is argv[1]).

Python loads extension modules binding every symbol at once, so the import fails where torch's
libraries need an nccl symbol that Weft's library lacks. Exit status: 0, torch imported and Weft's
is the only libnccl mapped; 5, the import failed (printed); 6, torch imported but another libnccl
is mapped too, which may have supplied what Weft lacks (the import then proves nothing); 2, usage.
"""

import os
import sys


def mapped_nccl_libraries():
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libnccl" in line and "/" in line}
    return sorted(os.path.realpath(path) for path in paths)


def main():
    if len(sys.argv) != 2:
        print("usage: torch_import.py WEFT_LIBNCCL", file=sys.stderr)
        return 2
    weft = os.path.realpath(sys.argv[1])
    try:
        import torch  # noqa: F401
    except ImportError as error:
        print("import torch failed with Weft's library preloaded: %s" % error)
        return 5
    others = [path for path in mapped_nccl_libraries() if path != weft]
    if others:
        print("torch imported, but another libnccl is mapped beside Weft's: %s" % ", ".join(others))
        return 6
    print("torch imported with Weft's libnccl.so.2 the only one mapped: it has every nccl symbol torch binds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
