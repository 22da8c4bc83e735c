"""Diagnosis of nanobind's "leaked instances" report at interpreter exit: runs the
Python suite in this process, then prints what still refers to each ComputeDevice
instance the suite created (two levels of referrers), once the suite's own module
globals are dropped. Used by scripts/device/session.sh hostile."""
import gc
from collections import Counter
import pathlib
import sys

import pytest

root = pathlib.Path(__file__).resolve().parent.parent.parent
pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(root / "tests/python")])

import devicearray as da  # noqa: E402

conftest = sys.modules.get("conftest")
devices = list(getattr(conftest, "DEVICES", []))
# Drop the references module globals hold, as interpreter shutdown would.
for name, module in list(sys.modules.items()):
    if name == "conftest" or name.startswith("test_"):
        for key, value in list(vars(module).items()):
            if not key.startswith("__"):
                setattr(module, key, None)
gc.collect()


def describe(obj):
    if isinstance(obj, dict):
        return f"dict keys={sorted(map(str, obj))[:6]}"
    if isinstance(obj, (list, tuple)):
        return f"{type(obj).__name__} len={len(obj)}"
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


this_frame = sys._getframe()
for device in devices:
    direct = Counter()
    second = Counter()
    for ref in gc.get_referrers(device):
        if ref is devices or ref is this_frame:
            continue
        direct[describe(ref)] += 1
        for ref2 in gc.get_referrers(ref):
            if ref2 is not this_frame:
                second[describe(ref2)] += 1
    print(f"== {device!r}: refcount {sys.getrefcount(device) - 2}")
    for text, n in direct.most_common(8):
        print(f"   {n:4d} <- {text}")
    for text, n in second.most_common(8):
        print(f"   {n:4d} <-<- {text}")
