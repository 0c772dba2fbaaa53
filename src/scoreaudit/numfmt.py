"""Number formatting: one rule everywhere (results.json sentences, reports), so a reader compares like with like.

Estimates are shown to 3 significant digits (never in scientific notation
between 1e-4 and 1e6), p and q values as "< 0.001" below 0.001, undefined
numbers (None, NaN) as an em dash. The minus sign is U+2212 so numbers align
and read as numbers in every font.
"""

from __future__ import annotations

import math
from typing import Any

MINUS = "\u2212"
UNDEFINED = "\u2014"  # em dash


def _finite(x: Any) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def num(x: Any, sig: int = 3, signed: bool = False) -> str:
    """`x` to `sig` significant digits; `signed` adds a plus sign to positives."""
    v = _finite(x)
    if v is None:
        return UNDEFINED
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    if mag < -4 or mag >= 6:
        mant, exp = f"{abs(v):.{sig - 1}e}".split("e")
        body = f"{mant}\u00d710{_superscript(int(exp))}"
    else:
        decimals = max(0, sig - 1 - mag)
        rounded = round(abs(v), decimals)
        # rounding can carry into a new digit (9.996 -> 10.0): recompute decimals
        if rounded and math.floor(math.log10(rounded)) > mag:
            decimals = max(0, decimals - 1)
        body = f"{abs(v):,.{decimals}f}"
        if float(body.replace(",", "")) == 0:
            return "0"
    sign = MINUS if v < 0 else ("+" if signed else "")
    return sign + body


def signed(x: Any, sig: int = 3) -> str:
    return num(x, sig, signed=True)


def pval(p: Any) -> str:
    """p or q value: "< 0.001" below 0.001, else 2 significant digits with at most 3 decimals."""
    v = _finite(p)
    if v is None:
        return UNDEFINED
    if v < 0.001:
        return "< 0.001"
    if v >= 1:
        return "1"
    decimals = min(3, max(0, 1 - math.floor(math.log10(v))))  # 2 significant digits, at most 3 decimals
    text = f"{v:.{decimals}f}"
    return "1" if float(text) >= 1 else text  # 0.996 reads as 1, as p = 1 does (never "1.00" beside "1")


def peq(p: Any, name: str = "p") -> str:
    """`p = 0.03` or `p < 0.001`."""
    s = pval(p)
    return f"{name} {s}" if s.startswith("<") else f"{name} = {s}"


def ci(lo: Any, hi: Any, sig: int = 3) -> str:
    if _finite(lo) is None and _finite(hi) is None:
        return UNDEFINED
    return f"[{num(lo, sig)}, {num(hi, sig)}]"


def plain(x: Any) -> str:
    """A number the user typed (threshold, alpha): its shortest exact form."""
    v = _finite(x)
    return UNDEFINED if v is None else f"{v:.6g}".replace("-", MINUS)


def pct(x: Any, sig: int = 3) -> str:
    v = _finite(x)
    return UNDEFINED if v is None else num(100 * v, sig) + "%"


def count(x: Any) -> str:
    v = _finite(x)
    return UNDEFINED if v is None else f"{int(round(v)):,}"


def _superscript(n: int) -> str:
    table = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
    return str(n).translate(table)
