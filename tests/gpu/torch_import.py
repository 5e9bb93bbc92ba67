"""Imports torch in a process whose LD_PRELOAD holds Weft's libnccl.so.2 (the path is argv[1]).

Python loads extension modules binding every symbol at once, so the import fails where torch's
libraries need an nccl symbol that Weft's library lacks. As in torch_client.py's ranks, torch's
own search for NVIDIA's NCCL (nvidia/nccl/lib on sys.path, or a ctypes load by path) finds Weft's
library, so that no other libnccl can supply what Weft lacks. Exit status: 0, torch imported and
Weft's is the only libnccl mapped; 5, the import failed (printed); 6, torch imported but another
libnccl is mapped too (the import then proves nothing); 2, usage.
"""

import os
import sys
import tempfile

from torch_client import load_nccl_only_from, nccl_shim


def mapped_nccl_libraries():
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            path = fields[5].strip() if len(fields) == 6 else ""
            if "libnccl" in path and path.startswith("/") and not path.endswith("(deleted)"):
                paths.add(os.path.realpath(path))
    return sorted(paths)


def main():
    if len(sys.argv) != 2:
        print("usage: torch_import.py WEFT_LIBNCCL", file=sys.stderr)
        return 2
    weft = os.path.realpath(sys.argv[1])
    with tempfile.TemporaryDirectory() as folder:
        sys.path.insert(0, nccl_shim(weft, folder))
        load_nccl_only_from(weft)
        try:
            import torch  # noqa: F401
        except Exception as error:  # an ImportError for a missing symbol; an OSError from a preload
            print("import torch failed with Weft's library preloaded: %s: %s" % (type(error).__name__, error))
            return 5
    others = [path for path in mapped_nccl_libraries() if path != weft]
    if others:
        print("torch imported, but another libnccl is mapped beside Weft's: %s" % ", ".join(others))
        return 6
    print("torch imported with Weft's libnccl.so.2 the only one mapped: it has every nccl symbol torch binds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
