"""One committed answer: credit in the answer domains goes to a reply that states one
answer, not to a reply that lists several and lets a lenient reader pick the right one.

A reply *hedges* when it holds a right candidate beside a wrong one:

- it declares several answers (`<answer>` tags, `\\boxed{}`), some judged wrong, while
  the one scored is right (`"<answer>542</answer> ... <answer>543</answer>"`);
- its final answer splits into candidates at a separator the expected answer does not
  use (`or`, `|`, `;`, `,`, `/`, `and`, `and/or`, `\\lor`, `\\text{or}`, `\\quad`, a new
  line, "maybe"/"alternatively"), some right and some wrong (`542 or 543`,
  `\\{542, 543\\}`, `Yes/No`);
- the expected answer is one number and the final answer holds several numbers, one of
  them right on its own (`542 543`, `543 (269 + 274)`: the inputs echoed beside it);
- (`extra_numbers`, for answers compared as text by a dataset's scorer) the final answer
  holds more numbers than the expected one, however they are joined: a lenient parser
  reads the fields it wants and drops the rest (`12:10:52:12:11:52` for a duration,
  `11:10:06.387:±1s`, `71,59` read as 7159).

A bound is not a value (`bound`): a final answer that states a relation other than
equality (`\\geq 543`, `> 12`, `36/7 \\text{ or more}`, "at least 5") where the expected
answer states none commits to no number, though math-verify reads the number beside it.

Not a hedge but refused beside them (`unasked_percent`, for math): a final answer that is
a percentage (`54\\%`) of the expected plain number where the prompt never asks for a
percentage, a unit game that math-verify, comparing the numbers alone, would pay.

Candidates are judged by the domain's own checker (math-verify, the dataset's scorer), so
`5` beside `5.0` is not a hedge (both right) and `2\\sqrt{3}` is not one for `3.4641`
(neither number alone is right). `hedge` returns the reason, or None for a committed
answer; the environments give a hedged reply no credit (docs/hacking.md).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from fractions import Fraction

from rlvr.rewards.extract import answer_tags, boxed_all, without_answer_tags

_FRAC = re.compile(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}")
_NUMBER = re.compile(
    r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?:\s*/\s*[-+]?\d+(?:\.\d+)?)?|[-+]?\.\d+"
)
# (separator, whether the expected answer uses it): a separator the expected answer itself
# contains (a list's commas, a fraction's slash) is not one between candidates
_SEPARATORS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("or", r"\s+or\s+|\\text\{\s*or\s*\}|\\(?:lor|vee)\b|∨|\bor\b"),
        ("and", r"\s+and/or\s+|\s+and\s+|\\text\{\s*and\s*\}|&"),
        ("|", r"\|"),
        (";", r";"),
        (",", r",(?!\d{3}(?!\d))"),
        ("/", r"/"),
        ("newline", r"\n"),
        ("space", r"\\q?quad\b"),
        ("maybe", r"\b(?:maybe|possibly|perhaps|alternatively|otherwise)\b"),
    )
)
_STRIP = " \t\r\n.$\"'`()[]{}\\"
_LEAD = re.compile(r"^(?:either|maybe|possibly|perhaps|it is|it's|answer:?)\s+", re.IGNORECASE)


def declared_answers(reply: str) -> list[str]:
    """Every answer the reply declares, in order: each `<answer>` tag's content (a box
    inside a tag counts once, as the tag) and each `\\boxed{}` outside the tags."""
    out: list[str] = []
    for tag in answer_tags(reply):
        inner = tag.strip()
        boxes = boxed_all(inner)
        out.append(boxes[-1].strip() if boxes and inner.startswith("\\boxed") else inner)
    out += [b.strip() for b in boxed_all(without_answer_tags(reply))]
    return [a for a in out if a]


def _clean(part: str) -> str:
    part = part.strip(_STRIP)
    return _LEAD.sub("", part).strip(_STRIP)


def numbers(text: str) -> list[str]:
    """The number tokens of `text` (a LaTeX fraction and `a/b` count as one; `1,234` is one)."""
    return [m.group(0).replace(" ", "") for m in _NUMBER.finditer(_FRAC.sub(r"\1/\2", text))]


def candidates(answer: str, expected: str) -> list[str]:
    """The candidates a final answer holds: its parts at every separator the expected
    answer does not use; when the expected answer is one number, each number as well.
    A committed answer is one candidate (itself)."""
    parts = [answer]
    for name, sep in _SEPARATORS:
        if name != "space" and sep.search(expected):
            continue
        parts = [p for chunk in parts for p in sep.split(chunk)]
    found = [c for c in (_clean(p) for p in parts) if c]
    if len(numbers(expected)) == 1:
        nums = numbers(answer)
        if len(nums) > 1:
            found += [n for n in nums if n not in found]
    return found if len(found) > 1 else [answer.strip()]


def hedge(reply: str, answer: str, expected: str, is_right: Callable[[str], bool]) -> str | None:
    """Why `reply` (whose final answer `answer` was judged right) hedges, or None.

    `is_right` judges one candidate as the domain does. Only called for a reply that
    earned credit: a wrong reply earns nothing either way."""
    declared = declared_answers(reply)
    if len(declared) > 1:
        wrong = [d for d in declared if d.strip() != answer.strip() and not is_right(d)]
        if wrong:
            shown = " | ".join(d[:30] for d in declared[:4])
            return f"declares {len(declared)} answers ({shown}), {len(wrong)} of them wrong"
    parts = candidates(answer, expected)
    if len(parts) > 1:
        verdicts = [is_right(p) for p in parts]
        if any(verdicts) and not all(verdicts):
            shown = " | ".join(p[:30] for p in parts[:4])
            return f"its answer holds {len(parts)} candidates ({shown}), right and wrong"
    return None


_RELATION = (
    r"\\(?:geqq?|leqq?|geqslant|leqslant|ge|le|gt|lt|gg|ll|gtrsim|lesssim|succ(?:eq)?|prec(?:eq)?|ngtr|nless)"
    r"(?![a-zA-Z])|[<>≥≤≦≧⩾⩽≳≲≫≪]|\b(?:at\s+(?:least|most)|(?:no\s+)?(?:more|less|fewer|greater)\s+than|up\s*to"
    r"|upwards\s+of|over|above|under|below|minimum|maximum|min|max)\b"
)
_NUM = r"[-+−]?(?:\d|\.\d|\\[dt]?frac)"
# a relation right before the answer's number (an optional one-letter variable before
# it: `x \geq 5`), or a qualifier right after a digit (`36/7 or more`, `543+`); both read
# the answer with its LaTeX wrappers and braces taken out (_WRAPPERS)
_BOUND_BEFORE = re.compile(rf"^(?:[a-zA-Z]\s*)?({_RELATION})\s*=?\s*{_NUM}", re.IGNORECASE)
_BOUND_AFTER = re.compile(
    r"\d\s*(or\s+(?:more|less|fewer|greater|higher|lower|above|below|over|under|so)\b"
    r"|and\s+(?:up|above|over|more)\b|\^\s*\+|\+(?!\s*[\w(\\]))",
    re.IGNORECASE,
)
_WRAPPERS = re.compile(r"\\(?:text|mathrm|textrm|mbox|operatorname)\s*\{|[{}$]|\\[ ,;:!]|~")


def _relation(text: str) -> str | None:
    flat = " ".join(_WRAPPERS.sub(" ", text).split())
    m = _BOUND_BEFORE.search(flat) or _BOUND_AFTER.search(flat)
    return m.group(1).strip() if m else None


def bound(answer: str, expected: str) -> str | None:
    """Why a final answer states a bound instead of a value, or None: a relation other
    than equality right before its number (`\\geq 543`, `x < 12`, "at least 5") or a
    qualifier right after it (`36/7 or more`, `543+`), where the expected answer has no
    such bound. A relation elsewhere (an arrow `A -> C`, "adds up to 543") is not one."""
    found = _relation(answer)
    if found and not _relation(expected):
        return f"its answer states a bound ({found!r}), not a value"
    return None


def extra_numbers(answer: str, expected: str) -> str | None:
    """Why a final answer offers more than the expected answer's numbers, or None: more
    number tokens than the expected answer has (`numbers`). For answers a scorer reads as
    text (reasoning-gym's); not for math, where `2\\sqrt{3}` may rightly answer `3.4641`."""
    want, got = len(numbers(expected)), len(numbers(answer))
    if want and got > want:
        return f"its answer holds {got} numbers where the answer has {want}"
    return None


_PERCENT = re.compile(r"%|\\%|\bper\s?cent", re.IGNORECASE)
_PERCENT_WORD = re.compile(r"\bper\s?cent(age)?s?\b", re.IGNORECASE)


def _number(text: str) -> float | None:
    found = numbers(text.replace("\\%", " ").replace("%", " "))
    if len(found) != 1:
        return None
    try:
        return float(found[0].replace(",", "").replace("−", "-"))
    except ValueError:
        return None


def unasked_percent(answer: str, expected: str, prompt: str) -> str | None:
    """Why a final answer is a percentage where a plain number is asked, or None: it holds
    a percent sign (`%`, `\\%`, "percent") that the expected answer lacks, its number is the
    expected number itself (54% for 54: not 54% for 0.54, which is the same value), and the
    prompt never says "percent" or "percentage" in words (a `%` it holds is an operand:
    "10% off", "15% of 80"). math-verify compares `54\\%` with `54` by the number alone,
    so 0.54 of a thing would be paid as 54 dollars."""
    if not _PERCENT.search(answer) or _PERCENT.search(expected) or _PERCENT_WORD.search(prompt):
        return None
    got, want = _number(answer), _number(expected)
    if got is None or want is None or got != want:
        return None
    return "its answer is a percentage where the question asks for a number"


# words that scale the number they follow: a magnitude, or a unit a hundredth of the usual one
_SCALE = re.compile(
    r"\b(?:hundreds?|thousands?|millions?|billions?|trillions?|dozens?|(?<!per )(?<!per)cents?|pennies|penny|pence)\b"
    r"|(?-i:(?<=\d)k\b|\\(?:text|mathrm)\{\s*k\s*\})",  # 240k; not "5 m" (metres, minutes) nor 300K (kelvin)
    re.IGNORECASE,
)


def unasked_scale(answer: str, expected: str, prompt: str = "") -> str | None:
    """Why a final answer scales its number by a word the expected answer lacks, or None:
    `240 thousand` or `13 cents` where the expected answer is the plain number 240 or 13
    (math-verify drops the words and compares the numbers, paying a thousand times the
    amount, or a hundredth of it). Only where the answer's number is the expected number
    itself: `240 thousand` for 240000 is not paid by the number either way; nor where the
    prompt uses the word itself ("how many cents", "in thousands")."""
    found = _SCALE.search(answer)
    if found is None or _SCALE.search(expected):
        return None
    word = re.sub(r"\\(?:text|mathrm)\{\s*|\s*\}", "", found.group(0)).strip().lower().rstrip("s")
    if word and re.search(rf"\b{re.escape(word)}", prompt, re.IGNORECASE):
        return None
    got, want = _number(answer), _number(expected)
    if got is None or want is None or got != want:
        return None
    return f"its answer scales the number by '{found.group(0).strip()}', which the expected answer has not"


_ROUNDING_ASKED = re.compile(
    r"\b(?:round|rounded|rounding|nearest|decimal places?|significant|approximate(?:ly)?|about|estimate)\b",
    re.IGNORECASE,
)
_DECIMAL = re.compile(r"[-+−]?\d+\.\d+")
_EXACT = re.compile(r"\s*([-+−]?\d+)(?:\s*/\s*(\d+))?\s*")


def unasked_rounding(answer: str, expected: str, prompt: str = "") -> str | None:
    """Why a final answer is a decimal that only rounds to the expected fraction, or None:
    `9.263158` for 176/19, which math-verify pays because it compares numbers to about six
    decimal places. Only where the expected answer is an integer or a fraction written
    plainly, the answer holds one number and it is a decimal not equal to it exactly, and
    the prompt does not ask for rounding or an approximation."""
    want = _EXACT.fullmatch(expected.strip("$ "))
    numbers_in = _NUMBER.findall(answer)
    got = _DECIMAL.fullmatch(numbers_in[0].strip()) if len(numbers_in) == 1 else None
    if want is None or got is None or _ROUNDING_ASKED.search(prompt) or int(want.group(2) or 1) == 0:
        return None
    exact = Fraction(int(want.group(1).replace("−", "-")), int(want.group(2) or 1))
    stated = Fraction(got.group(0).replace("−", "-"))
    if stated == exact:
        return None
    return f"its answer {got.group(0)} is a rounded decimal, not {expected.strip()} exactly, which the prompt asks for"


def lookalike(answer: str, expected: str) -> str | None:
    """Why a final answer holds a character that becomes the expected answer's only under
    the scorer's folding, or None: the Kelvin sign (U+212A) lower-cases to 'k', a long s
    upper-cases to 'S', a full-width or ligature letter normalises to ASCII ones. A reply
    spelling 'gnerk' with a Kelvin sign is not 'gnerk'. Only where the expected answer is
    ASCII and does not hold the character itself."""
    if not expected.isascii():
        return None
    for c in answer:
        if c.isascii() or c in expected:
            continue
        folds = (c.lower(), c.upper(), c.casefold(), unicodedata.normalize("NFKC", c))
        ascii_fold = next((f for f in folds if f.isascii() and f.strip()), None)
        if ascii_fold is not None:
            return f"its answer holds {c!r} (U+{ord(c):04X}), which only folds to {ascii_fold!r}"
    return None
