"""Observed values on the wire: builtin types only, tagged, size-limited.

`encode` runs inside the sandbox and accepts only exact builtin types (a subclass of int
with a rigged `__eq__` is refused, not trusted); `decode` runs in the supervisor and
rebuilds plain builtins, which are then compared with the expected values there. Whatever
a submission writes, the supervisor only ever compares plain data. A string holding
surrogates travels as its bytes (`str_sp`, UTF-8 with surrogatepass), since JSON would
join a high and a low surrogate into one character and a reply that joins them would
then compare equal.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 64
MAX_NODES = 200_000
MAX_INT_DIGITS = 4000


class WireError(ValueError):
    pass


def encode(value: Any) -> Any:
    budget = [MAX_NODES]

    def enc(v: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise WireError(f"value too large (more than {MAX_NODES} elements)")
        if depth > MAX_DEPTH:
            raise WireError(f"value nested deeper than {MAX_DEPTH}")
        t = type(v)
        if v is None:
            return ["none"]
        if t is bool:
            return ["bool", v]
        if t is int:
            s = str(v)
            if len(s) > MAX_INT_DIGITS:
                raise WireError("integer too large")
            return ["int", s]
        if t is float:
            return ["float", repr(v)]
        if t is complex:
            return ["complex", repr(v.real), repr(v.imag)]
        if t is str:
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:  # surrogates: JSON would join a pair into one character
                return ["str_sp", v.encode("utf-8", "surrogatepass").hex()]
            return ["str", v]
        if t is bytes:
            return ["bytes", v.hex()]
        if t is list or t is tuple or t is set or t is frozenset:
            items = [enc(x, depth + 1) for x in v]
            return [t.__name__, items]
        if t is dict:
            return ["dict", [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in v.items()]]
        raise WireError(f"cannot return a value of type {t.__name__!s}; only builtin types are compared")

    return enc(value, 0)


def decode(data: Any) -> Any:
    budget = [MAX_NODES]

    def dec(d: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > MAX_DEPTH:
            raise WireError("observed value too large or too deep")
        if not isinstance(d, list) or not d or not isinstance(d[0], str):
            raise WireError("malformed observed value")
        tag = d[0]
        if tag == "none":
            return None
        if tag == "bool" and len(d) == 2 and isinstance(d[1], bool):
            return d[1]
        if tag == "int" and len(d) == 2 and isinstance(d[1], str) and len(d[1]) <= MAX_INT_DIGITS:
            return int(d[1])
        if tag == "float" and len(d) == 2 and isinstance(d[1], str):
            return float(d[1])
        if tag == "complex" and len(d) == 3:
            return complex(float(d[1]), float(d[2]))
        if tag == "str" and len(d) == 2 and isinstance(d[1], str):
            return d[1]
        if tag == "str_sp" and len(d) == 2 and isinstance(d[1], str):
            return bytes.fromhex(d[1]).decode("utf-8", "surrogatepass")
        if tag == "bytes" and len(d) == 2 and isinstance(d[1], str):
            return bytes.fromhex(d[1])
        if tag in ("list", "tuple", "set", "frozenset") and len(d) == 2 and isinstance(d[1], list):
            items = [dec(x, depth + 1) for x in d[1]]
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "dict" and len(d) == 2 and isinstance(d[1], list):
            out = {}
            for pair in d[1]:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise WireError("malformed dict entry")
                out[dec(pair[0], depth + 1)] = dec(pair[1], depth + 1)
            return out
        raise WireError(f"malformed observed value with tag {tag!r}")

    try:
        return dec(data, 0)
    except (TypeError, ValueError) as e:
        if isinstance(e, WireError):
            raise
        raise WireError(f"malformed observed value: {e}") from None
