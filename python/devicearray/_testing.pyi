"""Private helpers for the devicearray test suite."""



def capsule_name(capsule: object) -> str:
    """The capsule's current name."""

def tensor_info(capsule: object) -> dict:
    """
    The DLTensor fields of an unconsumed capsule (plus version and flags when versioned).
    """

def count_deleter_calls(capsule: object) -> None:
    """
    Instruments the tensor of an unconsumed capsule: each call of its deleter increments deleter_calls().
    """

def deleter_calls() -> int: ...

def reset_deleter_calls() -> None: ...

def set_version(capsule: object, major: int, minor: int) -> None:
    """Overwrites a versioned tensor's version field."""

def set_flags(capsule: object, flags: int) -> None:
    """Overwrites a versioned tensor's flags."""
