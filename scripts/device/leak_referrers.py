"""Diagnosis of nanobind's "leaked instances" report at interpreter exit.

  python leak_referrers.py [PYTEST ARGS...]

Runs pytest in this process, then drops what interpreter shutdown would drop (the
globals of the test modules, conftest and pytest), collects garbage, and for every
ComputeDevice instance the suite created that is still referenced, prints the chains
of referrers up to an object with no tracked referrer (a root held from C). Used by
scripts/device/session.sh."""
import gc
import sys

import pytest

pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", *sys.argv[1:]])

import devicearray as da  # noqa: E402

devices = list(getattr(sys.modules.get("conftest"), "DEVICES", []))
mine = {id(devices)}
for name in list(sys.modules):
    if name == "conftest" or name.startswith(("test_", "_pytest", "pytest", "pluggy")):
        module = sys.modules.pop(name)
        for key in list(vars(module)):
            if not key.startswith("__"):
                setattr(module, key, None)
gc.collect()


def describe(obj):
    if isinstance(obj, dict):
        return f"dict{sorted(map(str, obj))[:6]}"
    if isinstance(obj, (list, tuple, set)):
        return f"{type(obj).__name__}(len {len(obj)})"
    if callable(obj) and hasattr(obj, "__qualname__"):
        return f"{type(obj).__name__} {getattr(obj, '__module__', '?')}.{obj.__qualname__}"
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def chains(obj, depth, seen, prefix):
    referrers = [r for r in gc.get_referrers(obj) if id(r) not in mine and r is not sys._getframe()
                 and not isinstance(r, type(sys._getframe()))]
    if not referrers:
        print(prefix + "(no tracked referrer: held from C, or by a module being torn down)")
    for r in referrers[:4]:
        if id(r) in seen:
            continue
        seen.add(id(r))
        print(prefix + "<- " + describe(r))
        if depth > 0:
            chains(r, depth - 1, seen, prefix + "   ")


for device in devices:
    print(f"== {device!r}: {sys.getrefcount(device) - 3} references besides this script's")
    chains(device, 5, set(), "  ")
