"""Receipts as data in tests: what each entry of a receipt says (outcome, verb, ids, code, line),
read back from the user's receipt line, the model's receipt, a local answer or a change note with
patterns made from ops/receipts.py's own tables (OUTCOMES, CHANGES), and the table's words for the
few tests that must look for them on a screen. Tests assert outcomes, verbs, ids and codes; the
words are pinned once, by tests/ops/test_receipt_golden.py (tests/fixtures/receipts.golden.txt),
so rewording an outcome changes ops/receipts.py, that golden and the docs that quote it."""
import re
import string
from typing import NamedTuple

from intent_loop.ops import receipts
from intent_loop.ops.receipts import CHANGES, OUTCOMES, Entry

_ID = r"[0-9a-f]{8}"
_LINE = r"(?:line (?P<line>\d+):? )?"  # the user's `line 3 rejected ...`, the model's `- line 3: ...`
_FIELDS = {"verb": r"(?P<verb>[a-z][a-z-]*)", "code": r"(?P<code>[A-Z][A-Z_]*)"}


class Said(NamedTuple):
    """One receipt entry read back: the words of its other fields (label, ages, reason ...) in `words`."""

    outcome: str
    verb: str | None
    ids: tuple
    code: str | None
    line: int | None
    words: dict


def rendered(outcome, verb=None, *ids, **extra):
    """The table's words for one entry, as ops/receipts.py renders them for the user and the model."""
    return Entry(0, verb, outcome, ids, **extra).text()


def head(outcome, verb=None):
    """The table's words for an entry up to its first id or other field (`recorded goal [`): for a
    terminal screen that may cut the line after them."""
    out = []
    for literal, field, _spec, _conv in string.Formatter().parse(OUTCOMES[outcome]):
        out.append(literal)
        if field != "verb":
            break
        out.append(verb)
    return "".join(out)


def published(version):
    """The Guard line's words for a published contract (`Guard contract v2`), without the enforcement."""
    return receipts.guard_text({"action": "published", "version": version})


def _pattern(template):
    parsed = list(string.Formatter().parse(template))
    out, seen = [_LINE], set()
    for index, (literal, field, _spec, _conv) in enumerate(parsed):
        out.append(re.escape(literal))
        if field is None:
            continue
        if field.isdigit():
            out.append(f"(?P<id{field}>{_ID})")
        elif field in _FIELDS:
            out.append(_FIELDS[field])
        elif field in seen:  # `approved` names its rule twice
            out.append(f"(?P=w_{field})")
        else:
            last = index == len(parsed) - 1
            out.append(f"(?P<w_{field}>[^;\n]*)" if last else f"(?P<w_{field}>[^\n]*?)")
        seen.add(field)
    return re.compile("".join(out))


_PATTERNS = {id(table): {outcome: _pattern(template) for outcome, template in table.items()}
             for table in (OUTCOMES, CHANGES)}


def read(text, *, table=OUTCOMES):
    """Every entry `text` holds, in order: `table` is OUTCOMES (receipts, local answers) or CHANGES
    (the model's change note)."""
    found = []
    for outcome, pattern in _PATTERNS[id(table)].items():
        for match in pattern.finditer(text):
            groups = match.groupdict()
            ids = tuple(groups[name] for name in sorted(groups) if name.startswith("id") and groups[name])
            words = {name[2:]: value for name, value in groups.items() if name.startswith("w_")}
            if not ids:  # `confirmed` names its ids inside its pairs
                ids = tuple(re.findall(rf"\[({_ID})\]", match.group(0)))
            line = int(groups["line"]) if groups.get("line") else None
            found.append((match.start(), -match.end(), Said(outcome, groups.get("verb"), ids, groups.get("code"),
                                                            line, words)))
    kept, end = [], -1
    for start, negative_end, entry in sorted(found, key=lambda item: item[:2]):
        if start >= end:  # an entry found inside a longer one is not another entry
            kept.append(entry)
            end = -negative_end
    return kept


def said(text, outcome, verb=None, *, ids=(), code=None, line=None, table=OUTCOMES):
    """How many entries of `text` have this outcome and, where given, this verb, these first ids,
    this code and this line number."""
    if verb is not None and "{verb}" not in table[outcome]:
        raise ValueError(f"the {outcome!r} entry does not name its verb: test what it does name")
    want = tuple(i[:8] for i in ids)
    return sum(1 for entry in read(text, table=table) if entry.outcome == outcome
               and (verb is None or entry.verb == verb) and entry.ids[:len(want)] == want
               and (code is None or entry.code == code) and (line is None or entry.line == line))
