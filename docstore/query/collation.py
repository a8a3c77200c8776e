"""Collations: the string comparison an operation asks for (MongoDB manual, "Collation").

Implemented: the simple collation (binary comparison, what every operation uses without one)
and the `en_US` / `en` locale at strengths 1, 2 and 3 with the other options at their defaults:

- strength 1 (primary): base letters only, so "PING", "ping" and "píng" compare equal;
- strength 2 (secondary): base letters, then diacritics: "PING" equals "ping", not "píng";
- strength 3 (tertiary, the default): then case, lower case first ("ping" < "PING").

A string is compared through its collation key: the base letters (NFKD without combining marks,
case folded), then the case-folded string, then the string with its case inverted, each part
present up to the strength. Comparing keys compares first by base letters, then by diacritics,
then by case, as the Unicode Collation Algorithm's levels do (for ASCII and Latin letters; the
full root collation's order of punctuation and scripts is not reproduced).

A collation the engine does not implement (another locale, a non-default option) is refused with
code 238 NotImplemented, as is a query operator whose collated meaning it does not evaluate
(`$regex`, `$expr`, `$where`, `$text` under a non-simple collation). A malformed collation gets
the server's error: code 2 BadValue (a document is required; strength 1 to 5).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from pymongo.errors import OperationFailure

NOT_IMPLEMENTED = 238
BAD_VALUE = 2

_LOCALES = ("en_US", "en")
_DEFAULTS = {"caseLevel": False, "caseFirst": "off", "numericOrdering": False, "alternate": "non-ignorable",
             "maxVariable": "punct", "backwards": False, "normalization": False}
_KNOWN = {"locale", "strength", *_DEFAULTS}
# Operators whose operands are values compared with the document's (collated); the others keep theirs.
_COMPARING = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$all"}
_FILTERS = {"$elemMatch", "$not"}
_REFUSED = {"$regex", "$expr", "$where", "$text", "$options"}


def refuse(message: str, code: int = NOT_IMPLEMENTED):
    name = {NOT_IMPLEMENTED: "NotImplemented", BAD_VALUE: "BadValue"}[code]
    return OperationFailure(message, code, {"ok": 0.0, "errmsg": message, "code": code, "codeName": name})


class Collation:
    def __init__(self, strength: int):
        self.strength = strength

    def __repr__(self):
        return f"Collation(en_US, strength={self.strength})"

    def key(self, text: str) -> str:
        folded = text.casefold()
        base = "".join(c for c in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(c))
        parts = [base]
        if self.strength >= 2:
            parts.append(folded)
        if self.strength >= 3:
            parts.append(text.swapcase())
        return "\x01".join(parts)

    def document(self, value):
        """`value` with every string replaced by its key (field names unchanged)."""
        if isinstance(value, str):
            return self.key(value)
        if isinstance(value, Mapping):
            return {k: self.document(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.document(v) for v in value]
        return value

    def filter(self, spec):
        """A query filter whose compared values are keys, for matching keyed documents."""
        out = {}
        for field, cond in spec.items():
            if field in ("$and", "$or", "$nor"):
                out[field] = [self.filter(c) for c in cond]
            elif field in _REFUSED:
                raise refuse(f"{field} under a non-simple collation is not implemented by the embedded engine")
            elif field.startswith("$"):
                out[field] = cond
            elif isinstance(cond, Mapping) and cond and all(str(k).startswith("$") for k in cond):
                out[field] = self._operators(cond)
            else:
                out[field] = self.document(cond)
        return out

    def _operators(self, cond):
        out = {}
        for op, operand in cond.items():
            if op in _REFUSED:
                raise refuse(f"{op} under a non-simple collation is not implemented by the embedded engine")
            if op in _COMPARING:
                out[op] = self.document(operand)
            elif op == "$elemMatch":
                out[op] = self.filter(operand) if not all(str(k).startswith("$") for k in operand) or not operand \
                    else self._operators(operand)
            elif op == "$not":
                out[op] = self._operators(operand) if isinstance(operand, Mapping) else operand
            else:
                out[op] = operand
        return out


def parse(collation) -> Collation | None:
    """The collation an operation asked for: None for none or the simple collation."""
    if collation is None or isinstance(collation, Collation):
        return collation
    if hasattr(collation, "document"):  # pymongo.collation.Collation
        collation = collation.document
    if not isinstance(collation, Mapping):
        raise refuse("collation must be an object", BAD_VALUE)
    if "locale" not in collation:
        raise refuse("Missing required field: locale", BAD_VALUE)
    locale = collation["locale"]
    if locale == "simple":
        if set(collation) != {"locale"}:
            raise refuse("If 'locale' is set to 'simple', then no other fields may be specified", BAD_VALUE)
        return None
    unknown = set(collation) - _KNOWN
    if unknown:
        raise refuse(f"unknown collation field {sorted(unknown)[0]}", BAD_VALUE)
    strength = collation.get("strength", 3)
    if isinstance(strength, bool) or not isinstance(strength, int) or not 1 <= strength <= 5:
        raise refuse("strength must be an integer 1 through 5", BAD_VALUE)
    if locale not in _LOCALES or strength > 3 or any(collation.get(k, v) != v for k, v in _DEFAULTS.items()):
        raise refuse(f"the collation {dict(collation)} is not implemented by the embedded engine (it implements the "
                      "simple collation and en_US at strengths 1, 2 and 3 with default options)")
    return Collation(strength)
