"""Hypothesis strategies the fuzz targets share: JSON values of every kind, and bytes that
are almost what a parser wants."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
latin1 = st.text(alphabet=st.characters(max_codepoint=255), max_size=40)


@st.composite
def encoded(draw: st.DrawFn, value: Any) -> bytes:
    """``value`` as JSON bytes, as different clients write it: ASCII escapes or raw UTF-8 (lone
    surrogates kept as bytes no decoder takes), sometimes with a byte-order mark."""
    ascii_only = draw(st.booleans())
    text = json.dumps(value, ensure_ascii=ascii_only)
    raw = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        raw = b"\xef\xbb\xbf" + raw
    return raw


@st.composite
def mutated(draw: st.DrawFn, raw: bytes) -> bytes:
    """``raw`` with a few bytes replaced, inserted or removed, or cut short."""
    data = bytearray(raw)
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["replace", "insert", "delete", "cut"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "replace" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete" and data:
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "cut":
            del data[at:]
    return bytes(data)
