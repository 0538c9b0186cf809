""".rds export with variable labels, written in Python (no R needed): the `rdata` package.

pyreadr (librdata) cannot write attributes, so its .rds files lost the variable labels that
.dta/.sav carry (persona attributes: "Persona attribute POLPARTY (from respondents.csv)", issue
15), and labelling them through Rscript left a machine without R with unlabelled files (issue 27).
`rdata` (PyPI, >= 0.11) serializes R objects with any attributes, so each column is written as
the vector pyreadr wrote (the same R types: numbers and integers as doubles, text, logicals,
factors) with attr(x, "label") set: what haven, labelled and RStudio's viewer show. The file is written to a
temporary name beside the target and renamed into place, so it is whole or absent.

rdata converts numpy arrays and builds the R objects; the mapping from our column types to R's
(below) is written here because rdata's own pandas path does not take pandas 3's string columns
nor write missing values as NA, and text columns and the XDR stream are written by the small fast
paths below because rdata handles each string through numpy calls (~0.5 ms a string: minutes for
a full-scale run's tables, where pyreadr took a second).
"""

from __future__ import annotations

import gzip
import io
import struct
from pathlib import Path

import numpy as np
import pandas as pd

# R's NA_real_ is a NaN with payload 1954; a plain NaN (what pyreadr wrote) reads in R as NaN:
# is.na() is TRUE, but it prints as NaN, not as the NA that haven and R itself write for missing
from rdata.missing import R_FLOAT_NA, R_INT_NA


def _column(s: pd.Series):
    """(value for rdata, extra attributes) of one column, with the R type pyreadr gives it."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        levels = np.array([str(v) for v in s.cat.categories], dtype=object)
        codes = np.ma.masked_array(s.cat.codes.to_numpy(np.int32) + 1, mask=s.isna().to_numpy(), fill_value=R_INT_NA)
        return np.ma.filled(codes), {"levels": levels, "class": "factor"}
    if pd.api.types.is_bool_dtype(s.dtype) and not s.isna().any():
        return s.to_numpy(bool), {}
    if pd.api.types.is_numeric_dtype(s.dtype):  # integers as doubles, like pyreadr (R's integers are 32-bit)
        x = s.to_numpy(np.float64, na_value=np.nan).copy()
        x[np.isnan(x)] = R_FLOAT_NA
        return x, {}
    if pd.api.types.is_datetime64_any_dtype(s.dtype):  # POSIXct: seconds since 1970 in UTC
        t = s.dt.tz_convert("UTC") if s.dt.tz is not None else s.dt.tz_localize("UTC")
        x = (t - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(np.float64, na_value=np.nan).copy()
        x[np.isnan(x)] = R_FLOAT_NA
        return x, {"class": np.array(["POSIXct", "POSIXt"], dtype=object), "tzone": "UTC"}
    # text (object or pandas string columns): NA where missing, any other object as its text
    return _Text([None if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)
                  for v in s.astype(object)]), {}


class _Text:
    """A character vector (str or None for NA), written by _FastXDR in one piece (not a list: rdata
    would convert a list element by element)."""

    def __init__(self, values: list):
        self.values = values

    def __len__(self) -> int:
        return len(self.values)


def _text_object(data: _Text, converter):
    from rdata.conversion.to_r import build_r_object  # lazy: rdata imports in about 1.4 s; only .rds needs it
    from rdata.parser import RObjectType  # lazy: rdata imports in about 1.4 s; only .rds needs it

    return build_r_object(RObjectType.STR, value=data)


class _Labelled:
    """A data frame and its columns' labels, for the converter below."""

    def __init__(self, df: pd.DataFrame, labels: dict[str, str]):
        self.df, self.labels = df, labels


def _labelled_frame(data: _Labelled, converter):
    """A data.frame whose columns carry attr(x, "label") (rdata's constructor protocol)."""
    from rdata.conversion.to_r import build_r_object  # lazy: rdata imports in about 1.4 s; only .rds needs it
    from rdata.parser import RObjectType  # lazy: rdata imports in about 1.4 s; only .rds needs it

    cols = []
    for name, s in data.df.items():
        value, attrs = _column(s)
        label = data.labels.get(str(name))
        if label:
            attrs = {**attrs, "label": label}
        obj = converter.convert_to_r_object(value)
        if attrs:
            obj = build_r_object(obj.info.type, value=obj.value, is_object="class" in attrs,
                                 attributes=converter.convert_to_r_attributes(attrs))
        cols.append(obj)
    n = len(data.df)
    # compact row names c(NA_integer_, -n): what R writes for 1..n
    rows = np.ma.array(data=[R_INT_NA, -n], mask=[True, False], fill_value=R_INT_NA)
    attributes = converter.convert_to_r_attributes({
        "names": np.array([str(c) for c in data.df.columns], dtype=object),
        "class": "data.frame",
        "row.names": rows,
    })
    return build_r_object(RObjectType.VEC, value=cols, is_object=True, attributes=attributes)


_INT = struct.Struct(">i")
_NA_STRING = _INT.pack(9) + _INT.pack(-1)  # CHARSXP header (no flags), length -1: NA_character_
_ASCII_CHAR = _INT.pack(9 | (64 << 12))  # CHARSXP with the ASCII flag in its levels (gp) bits
_UTF8_CHAR = _INT.pack(9 | (8 << 12))  # CHARSXP with the UTF8 flag


def _fast_xdr():
    from rdata.parser import RObjectType  # lazy: rdata imports in about 1.4 s; only .rds needs it
    from rdata.unparser._unparser import pack_r_object_info  # lazy: rdata imports in about 1.4 s; only .rds needs it
    from rdata.unparser._xdr import UnparserXDR  # lazy: rdata imports in about 1.4 s; only .rds needs it

    class _FastXDR(UnparserXDR):
        """rdata's XDR writer with header integers packed by struct and _Text vectors written as one
        block (R's serialize format: each string a CHARSXP header, its length, its bytes)."""

        def unparse_int(self, value) -> None:
            self.file.write(_INT.pack(int(value)))

        def unparse_r_object(self, obj) -> None:
            if not isinstance(obj.value, _Text):
                return super().unparse_r_object(obj)
            parts = [_INT.pack(pack_r_object_info(obj.info)), _INT.pack(len(obj.value))]
            for v in obj.value.values:
                if v is None:
                    parts.append(_NA_STRING)
                else:
                    b = v.encode("utf-8")
                    parts += [_ASCII_CHAR if v.isascii() else _UTF8_CHAR, _INT.pack(len(b)), b]
            self.file.write(b"".join(parts))
            if obj.info.attributes:
                self.unparse_r_object(obj.attributes)
            return None

    return _FastXDR, RObjectType


def write_labelled(df: pd.DataFrame, path: Path, labels: dict[str, str] | None = None) -> None:
    """`df` (flat cells; Categoricals become R factors) as .rds at `path`, every column in `labels`
    (non-empty) with attr(x, "label")."""
    from rdata.conversion import convert_python_to_r_data  # lazy: rdata imports in about 1.4 s; only .rds needs it
    from rdata.conversion.to_r import DEFAULT_CLASS_MAP  # lazy: rdata imports in about 1.4 s; only .rds needs it

    data = convert_python_to_r_data(_Labelled(df, {c: v for c, v in (labels or {}).items() if v}),
                                    constructor_dict={**DEFAULT_CLASS_MAP, _Labelled: _labelled_frame,
                                                      _Text: _text_object})
    unparser, _ = _fast_xdr()
    buf = io.BytesIO()
    unparser(buf).unparse_r_data(data)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.rds.tmp")
    try:
        with gzip.open(tmp, "wb", compresslevel=6) as f:
            f.write(buf.getbuffer())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
