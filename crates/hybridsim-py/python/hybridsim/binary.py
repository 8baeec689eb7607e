"""Reading the binary results layout (``[output] format = "binary"``, ``results.bin``) with numpy
only: the same columns and f64 values as results.csv, bit for bit.

Layout (little-endian; docs/model-reference.md, ``[output]``): 8 bytes ``HSRESULT``, u32 version
(1), u32 column count ``n``, u32 offset of the first row (a multiple of 8), u32 byte length of
the column text, the header cells ``name[unit]`` one per line, zero padding, then the rows of
``n`` f64 each. A partial last row (a file cut short) is ignored and reported.
"""

from __future__ import annotations

import os
import struct
import warnings
from typing import Union

import numpy as np

MAGIC = b"HSRESULT"
VERSION = 1
FIXED_HEADER_BYTES = 24


def read_binary(path: Union[str, "os.PathLike[str]"], *, warn: bool = True):
    """``(columns, data, partial_row_bytes)`` of a binary results file: the header cells
    ``name[unit]``, the whole rows as an ``(rows, n)`` float64 array and the bytes of an ignored
    partial last row (a ``UserWarning`` names them when ``warn``). A damaged header raises
    ``ValueError`` naming the file and the field."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        fixed = f.read(FIXED_HEADER_BYTES)
        if not fixed.startswith(MAGIC):
            raise ValueError(f"{path}: not a binary results file (it does not start with `HSRESULT`)")
        if len(fixed) < FIXED_HEADER_BYTES:
            raise ValueError(f"{path}: binary header cut short: {len(fixed)} of its "
                             f"{FIXED_HEADER_BYTES} fixed bytes")
        version, n, first_row, text_len = struct.unpack("<4I", fixed[8:24])
        if version != VERSION:
            raise ValueError(f"{path}: binary header field `version`: {version}, this reader "
                             f"knows version {VERSION}")
        if FIXED_HEADER_BYTES + text_len > first_row or first_row % 8:
            raise ValueError(f"{path}: binary header field `first_row`: {first_row}")
        text = f.read(text_len).decode("utf-8")
        columns = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
        if len(columns) != n or n == 0:
            raise ValueError(f"{path}: binary header field `columns`: {n}, but the column text "
                             f"names {len(columns)}")
    size = os.path.getsize(path)
    rows, partial = divmod(max(size - first_row, 0), 8 * n)
    data = np.fromfile(path, dtype="<f8", count=rows * n, offset=first_row).reshape(rows, n)
    if partial and warn:
        warnings.warn(f"{path}: ends in a partial row ({partial} of {8 * n} bytes) after {rows} "
                      f"whole rows; the partial row is ignored", stacklevel=2)
    return columns, data, partial
