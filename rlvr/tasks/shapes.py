"""Inputs of a known shape for hidden tests (issue 33: input adequacy): the structures
that random draws and edits of the examples almost never produce, though a rule fitted
to the examples is wrong on exactly them.

Drawn by the kind of an argument, never by the task's name or family:

- integers: perfect squares (and their neighbours) up to 2**52, half of them squares of
  a prime (the one input where a trial-division loop bounded by `i * i < n` instead of
  `<=` is wrong: a composite root has a smaller factor that the loop still finds; and,
  last in `covering`, the squares of the first primes past 10**2 .. 10**7 and past a
  drawn power of two, where a table of primes below a round bound gives way), powers
  of two and of ten (and +-1) across widths, and the rare numbers of rlvr.tasks.numbers:
  Fermat and strong pseudoprimes, products of two primes past 46,340, machine-word edges.
  Past 2**52 (a 64-bit edge, 2**300 + 1, squares of 40 digits and of 300 bits) only
  where the caller says `exact`: the reference has no float in it, so its value there is the promise
  (a Python function's integers have no width), and honest code that goes through a
  float is wrong there as the hack that wraps at 64 bits is;
- two integer arguments: a pair with a common factor and cofactors past 50,
  consecutive Fibonacci numbers (Euclid's worst case: one step per index), and where
  `exact`, a small odd number beside one of 1,001 bits (a loop with a round budget);
- strings (over the examples' characters): a run of 10 or more of one character (or of
  100 to 300), a near-palindrome (length 8 or more, one mismatch inside the outer three
  pairs, one of them in case alone where the examples have a cased letter; or of length
  130 to 300 with the mismatch deep inside), Thue-Morse words of 128 and 2,048 letters
  over two of the examples' characters (a palindrome by polynomial hash calls them one),
  where the examples hold brackets of two kinds or more, a depth-balanced string with
  one closer of another kind away from its opener; and an
  example with one character of a class its examples never show (a space, a newline,
  punctuation, a digit, a non-ASCII letter, one past Latin-1, a letter whose case does
  not map one to one such as `ß` or titlecase `ǅ`, the other case of its letters): a
  rule fitted to the characters the examples use (`\\w` runs, `islower()`, a case-blind
  compare, a Latin-1 encoding, `is` on one-character strings) is wrong on exactly these.
  Letters past ASCII also come as a run, as a near-palindrome's one mismatched pair, and
  at the start of each word;
- two string arguments: an anagram pair, "checksum twins": equal length, equal set of
  characters and equal sum of codes, different counts, and "power twins" of degrees 3, 5
  and 7: not anagrams, with equal sums of the first 3, 5 or 7 powers of their codes (a
  multiset compared by its first moments);
- lists of integers: every small length with distinct values, machine-word edges (0 and
  the 32- and 64-bit edges: a sentinel or a fingerprint modulo a word), lists whose every
  value is past one side of an edge (a running maximum seeded with it), distinct values
  equal modulo a word or a hashing prime (a fingerprint modulo it), where the examples
  are signed every example value shifted up and down by 10**4 or more (pairs keep their
  sums far from the examples' values), and one element nested a level deeper where the
  examples nest; lists of integers or strings: a few of
  the examples' own values repeated, an example doubled and every example value twice (a
  rule counting distinct values where pairs are meant).

`shaped(args, examples, rng, nonneg, exact)` gives one argument tuple of a kind drawn at
random: an example with one argument (or a pair) replaced by a shaped value;
`covering(examples, rng, nonneg, exact)` gives one of every kind each argument can take
(drawn every step: a kind among a dozen left to a random choice reaches a step by luck).
`rlvr.tasks.shape_features.shapes(args, examples)` names the shapes an argument tuple
has, whatever drew it: the hidden-test selection keeps one input of each shape it can
(rlvr.rewards.selection). Pure functions of their arguments and the generator; the caller seeds it.
"""

from __future__ import annotations

import math
import random
import unicodedata
from typing import Any

from rlvr.tasks import numbers
from rlvr.tasks.numbers import FLOAT_EXACT as _BIG
from rlvr.tasks.numbers import is_prime as _is_prime
from rlvr.tasks.twins import (
    POWER_TWIN_DEGREES,
    THUE_MORSE_DEGREES,
    power_twins,
    thue_morse,
)

_OPEN, _CLOSE = "([{<", ")]}>"


def _int_kinds(exact: bool) -> list[str]:
    kinds = ["square", "prime_square", "power_of_ten", "power_of_two", "pseudoprime", "semiprime", "machine_edge"]
    return kinds + (["big_square"] if exact else [])


def _root(rng: random.Random) -> int:
    """A root of 2 to 8 digits: its square stays within float exactness."""
    e = rng.randint(1, 7)
    return rng.randint(10**e, min(10 ** (e + 1), math.isqrt(_BIG)))


def _int_value(rng: random.Random, kind: str, nonneg: bool = True, exact: bool = False) -> int:
    if kind in ("square", "prime_square"):  # a square of 3 to 16 digits, or one off it
        k = _root(rng)
        if kind == "prime_square":  # exactly: one off it is a square's neighbour
            return numbers.prime_at_most(k) ** 2
        return k * k + rng.choice((0, 0, 0, 1, -1))
    if kind == "power_of_ten":  # of 3 to 16 digits, or one off it (a digit count's edges),
        # most often the widest, 10**15: a shortcut through floats (log10) breaks at the top
        return 10 ** rng.choice((rng.randint(2, 15), 15, 15)) + rng.choice((0, 1, -1, -1))
    if kind == "power_of_two":
        return 2 ** rng.randint(4, 48) + rng.choice((0, 1, -1))
    if kind == "pseudoprime":
        return numbers.pseudoprime(rng, exact)
    if kind == "semiprime":
        return numbers.semiprime(rng)
    if kind == "big_square":
        return numbers.big_square(rng)
    return numbers.machine_edge(rng, nonneg, exact)


def _int_ladder(rng: random.Random, kind: str, nonneg: bool, exact: bool) -> list[int]:
    """Every rung of a kind that has rungs (each pseudoprime, each machine width), else one value."""
    if kind == "pseudoprime":
        return numbers.pseudoprimes(rng, exact)
    if kind == "machine_edge":
        return [numbers.machine_edge(rng, nonneg, exact, w) for w in numbers.widths(exact)]
    if kind == "big_square":
        return numbers.big_squares(rng)
    if kind in ("square", "power_of_two"):  # the value itself and each neighbour
        root = _root(rng)
        base = root * root if kind == "square" else 2 ** rng.randint(4, 48)
        return [base, base - 1, base + 1]
    if kind == "power_of_ten":  # the widest float-exact digit count's edges, then one of another width
        return [10**15 - 1, 10**15, 10 ** rng.randint(2, 14) + rng.choice((0, 1, -1))]
    return [_int_value(rng, kind, nonneg, exact)]


def _prime_square(b: int) -> bool:
    root = math.isqrt(b)
    return root * root == b and _is_prime(root)


def _power_of_ten(b: int) -> bool:
    return b > 0 and str(b).rstrip("0") == "1"


def _int_pair_kinds(exact: bool) -> tuple[str, ...]:
    return ("common_factor", "fibonacci", *(("lopsided",) if exact else ()))


def _alphabet(values: list[Any]) -> list[str]:
    return sorted({c for v in values if isinstance(v, str) for c in v})


# a character of each class a string's examples may lack (the class's name, the character)
_FOREIGN = (
    ("space", " "),
    ("punctuation", "-"),
    ("punctuation", "!"),
    ("digit", "7"),
    ("non_ascii", "é"),
    ("newline", "\n"),
    ("non_latin1", "Ж"),
    ("non_latin1", "ā"),
    ("special_case", "ß"),
    ("titlecase", "ǅ"),
    # Unicode's White_Space that str.split() splits at too: NEXT LINE (not \x1c-\x1f,
    # which Python alone counts: a program by Unicode's definition is honest there)
    ("rare_space", "\x85"),
    # by Unicode category and property rather than by the classes one writer used (blind
    # set 7): a line break of two characters (CRLF, one unit to a "line-aware" rule), a
    # UTF-16 surrogate pair (an astral character as text decoded from JSON may hold it),
    # a flag (two regional indicators), a symbol with case (So: not \w, not isalpha(),
    # yet upper() maps it), and a letter past ASCII whose lower case is ASCII (KELVIN SIGN)
    ("carriage_return", "\r\n"),
    ("surrogate", "\ud83d\ude00"),
    ("regional", "\U0001f1eb\U0001f1f7"),
    ("cased_symbol", "\u24d0"),
    ("folds_to_ascii", "\u212a"),
)


def _char_class(c: str) -> str:
    """The class of a character, as `_FOREIGN` names them. Whitespace past the six usual
    characters (the separators \\x1c-\\x1f, \\x85, \\xa0, \\u2028, \\u3000, ...) is
    rare_space; a carriage return is one of its own. Past ASCII: a surrogate, a regional
    indicator, a letter whose case does not map one to one (`ß`.upper() is `SS`; `ǅ` is
    titlecase), a symbol with case (`ⓐ`), a letter whose other case is ASCII (`K`, the
    KELVIN SIGN), one past Latin-1 (encodings and one-character caches stop there), else
    non_ascii."""
    if c.isspace() and c not in " \n\r\t\v\f":  # whitespace to str.split(), rarely thought of
        return "rare_space"
    if not c.isascii():
        category = unicodedata.category(c)
        if category == "Cs":
            return "surrogate"
        if "\U0001f1e6" <= c <= "\U0001f1ff":
            return "regional"
        if category == "Lt":
            return "titlecase"
        if len(c.upper()) != 1 or len(c.lower()) != 1:
            return "special_case"
        if category == "So" and (c.upper() != c or c.lower() != c):
            return "cased_symbol"
        if c.lower().isascii() or c.upper().isascii():
            return "folds_to_ascii"
        return "non_latin1" if ord(c) > 0xFF else "non_ascii"
    if c == "\r":
        return "carriage_return"
    if c in "\n\t\v\f":
        return "newline"
    if c.isspace():
        return "space"
    if c.isdigit():
        return "digit"
    if c.isalpha():
        return "upper" if c.isupper() else "lower"
    return "punctuation"


def _foreign(chars: list[str]) -> list[tuple[str, str]]:
    """(class, character) for each class of character the examples' alphabet lacks: a
    space, punctuation, a digit, a non-ASCII letter, and the other case of its letters."""
    have = {_char_class(c) for c in chars}
    out = [(k, c) for k, c in _FOREIGN if k not in have]
    for case, other in (("lower", "upper"), ("upper", "lower")):
        if case in have and other not in have:
            out += [(other, c.swapcase()) for c in chars if _char_class(c) == case][:3]
    return out


_WIDE = "non_ascii", "non_latin1", "special_case", "titlecase"  # the classes past ASCII


def _str_kinds(values: list[Any]) -> list[str]:
    """The shaped kinds a string argument can take, each foreign class a kind of its own."""
    chars = _alphabet(values)
    if not chars:
        return []
    kinds = ["run", "long_run"]
    if len(chars) >= 2:
        kinds += ["palindrome", "long_palindrome", "thue_morse"]
    if any(_case_pair(c) for c in chars):
        kinds.append("case_palindrome")
    if len({c for c in chars if c in _OPEN + _CLOSE} & set(_OPEN)) >= 2:
        kinds.append("brackets")
    if any(isinstance(v, str) and v for v in values):
        foreign = sorted({k for k, _ in _foreign(chars)})
        kinds += [f"foreign:{k}" for k in foreign]
        wide = [k for k in foreign if k in _WIDE]
        kinds += ["wide_run", "wide_initial"] if wide else []
        kinds += ["wide_palindrome"] if "non_latin1" in foreign and len(chars) >= 2 else []  # _MIRRORED's class
    return kinds


def _str_value(values: list[Any], rng: random.Random, kind: str | None = None, char: str | None = None) -> str | None:
    """A string of the `kind` named (one of `_str_kinds`; drawn from them when None); a
    foreign kind with `char` as its character where given."""
    chars = _alphabet(values)
    kinds = _str_kinds(values)
    if not kinds:
        return None
    kind = kind or rng.choice(kinds)
    words = [v for v in values if isinstance(v, str) and v]
    foreign = _foreign(chars)
    wide = [c for k, c in foreign if k in _WIDE]
    if kind.startswith("foreign:"):  # an example with one character of a class it never shows
        w = list(rng.choice(words))
        w[rng.randrange(len(w))] = char or rng.choice([c for k, c in foreign if k == kind[8:]])
        return "".join(w)
    if kind == "wide_initial":  # past ASCII at the start of each word: title() against upper()
        w = list(rng.choice(words))
        c = char or rng.choice(wide)
        for k in range(len(w)):
            if k == 0 or (w[k - 1] == " " and w[k] != " "):
                w[k] = c
        return "".join(w)
    if kind == "thue_morse":  # two of the examples' letters; a degree drawn where none is given
        a, b = rng.sample(chars, 2)
        return thue_morse(a, b, int(char) if char else rng.choice(THUE_MORSE_DEGREES))
    if kind in ("run", "long_run", "wide_run"):
        past = [c for c in wide if ord(c) > 0xFF]  # one-character strings are cached up to U+00FF
        c = rng.choice((past or wide) if kind == "wide_run" else chars)
        others = [x for x in chars if x != c]
        tail = rng.choice(others) if others and rng.random() < 0.5 else ""
        return c * (rng.randint(100, 300) if kind == "long_run" else rng.randint(10, 14)) + tail
    if kind in ("palindrome", "long_palindrome", "wide_palindrome", "case_palindrome"):
        size = rng.randint(65, 150) if kind == "long_palindrome" else rng.randint(4, 6)
        half = [rng.choice(chars) for _ in range(size)]
        s = half + half[::-1]
        if kind == "long_palindrome":  # the mismatch among the innermost pairs, past an outer scan
            i = size - 1 - rng.randint(0, 2)
            s[i] = rng.choice([c for c in chars if c != s[i]])
        elif kind == "wide_palindrome":  # two different letters past Latin-1, mirrored
            i = rng.randint(0, size - 1)
            s[i], s[-1 - i] = rng.sample(_MIRRORED, 2)
        elif kind == "case_palindrome":  # a mismatch in case alone, inside the outer three pairs
            i = rng.randint(3, size - 1)
            s[i] = rng.choice([c for c in chars if _case_pair(c)])
            s[-1 - i] = s[i].swapcase()
        else:
            i = rng.randint(3, size - 1)  # inside the outer three pairs
            s[i] = rng.choice([c for c in chars if c != s[i]])
        return "".join(s)
    return _crossed_brackets([c for c in _OPEN if c in chars], rng)


def _case_pair(c: str) -> bool:
    """A letter whose other case is one other character."""
    return c.isalpha() and len(c.swapcase()) == 1 and c.swapcase() != c


_MIRRORED = ("Ж", "ā", "Ω", "ł")  # past Latin-1: a lossy encoding maps them all to one


def _crossed_brackets(kinds: list[str], rng: random.Random) -> str:
    """A string balanced by depth, nested two deep or more, with one closer of another
    kind whose opener is not right before it: `(()]`, `[(())}`."""
    depth = rng.randint(2, 4)
    opens = [rng.choice(kinds) for _ in range(depth)]
    closes = [_CLOSE[_OPEN.index(o)] for o in reversed(opens)]
    j = rng.randint(1, depth - 1)  # not the innermost closer: its opener is right before it
    wrong = [_CLOSE[_OPEN.index(k)] for k in kinds if _CLOSE[_OPEN.index(k)] != closes[j]]
    closes[j] = rng.choice(wrong)
    return "".join(opens) + "".join(closes)


def _str_pair(values_a: list[Any], values_b: list[Any], rng: random.Random,
              kind: str | None = None) -> tuple[str, str] | None:  # fmt: skip
    """An anagram pair, checksum twins, or power twins of a degree (`kind` "anagram", "twins"
    or "power_twins:<degree>"; anagram or twins drawn when None)."""
    chars = sorted(set(_alphabet(values_a)) | set(_alphabet(values_b)))
    if len(chars) < 3:
        return None
    if kind and kind.startswith("power_twins:"):
        return power_twins(chars, int(kind.split(":")[1]), rng)
    s = [rng.choice(chars) for _ in range(rng.randint(5, 9))]
    if kind == "anagram" or (kind is None and rng.random() < 0.5):
        t = list(s)
        rng.shuffle(t)
        return "".join(s), "".join(t)
    # checksum twins: with y the midpoint of x and z, x z x z y and x z y y y have the same
    # length, set of characters and sum of codes (5y), and different counts
    pairs = [(x, z) for x in chars for z in chars if x < z and (ord(x) + ord(z)) % 2 == 0
             and chr((ord(x) + ord(z)) // 2) in chars]  # fmt: skip
    if not pairs:
        return None
    x, z = rng.choice(pairs)
    y = chr((ord(x) + ord(z)) // 2)
    base, twin = [*s[:3], x, z, x, z, y], [*s[:3], x, z, y, y, y]
    rng.shuffle(base)
    rng.shuffle(twin)
    return "".join(base), "".join(twin)


def _list_kinds(values: list[Any], exact: bool) -> list[str]:
    lists = [v for v in values if isinstance(v, list)]
    if not lists:
        return []
    kinds = []
    if any(isinstance(x, list) for v in lists for x in v):
        kinds.append("deeper")
    if all(type(x) in (int, str) for v in lists for x in v) and any(v for v in lists):
        kinds.append("repeats")
    pairs = any(len(v) >= 2 for v in lists)
    if pairs:
        kinds += ["doubled", "doubled_all"]
    if all(type(x) is int for v in lists for x in v) and any(v for v in lists):
        kinds += ["distinct", "machine_edges", "congruent"] + (["spread"] if pairs else [])
    return kinds


def _list_value(values: list[Any], rng: random.Random, nonneg: bool, kind: str | None = None,
                exact: bool = False) -> list[Any] | None:  # fmt: skip
    kinds = _list_kinds(values, exact)
    if not kinds:
        return None
    kind = kind or rng.choice(kinds)
    lists = [v for v in values if isinstance(v, list)]
    if kind == "deeper":
        v = [
            list(x) if isinstance(x, list) else x
            for x in rng.choice([v for v in lists if any(isinstance(x, list) for x in v)])
        ]
        i = rng.randrange(len(v))
        v[i] = [v[i]]
        return v
    if kind == "repeats":
        # a few of the examples' own values, repeated: a rule that counts distinct values
        # (a set where pairs are meant) is wrong on exactly these
        items = sorted({x for v in lists for x in v}, key=repr)
        pool = rng.sample(items, min(len(items), rng.randint(2, 3)))
        return [rng.choice(pool) for _ in range(rng.randint(len(pool) + 1, 8))]
    if kind == "machine_edges":
        return numbers.edge_list(rng, nonneg, exact)
    if kind == "spread":  # every value the examples hold, shifted up and down
        return None if nonneg else numbers.spread_list(_held(lists), rng)
    if kind == "doubled":  # an example with each element twice: positions against distinct values
        return [x for x in rng.choice([v for v in lists if len(v) >= 2]) for _ in (0, 1)]
    if kind == "doubled_all":  # every value the examples hold, each twice (pairs across examples)
        return [x for x in _held(lists) for _ in (0, 1)]
    ints = [x for v in lists for x in v]
    if kind == "congruent":  # an example's value and it plus each modulus a fingerprint may use
        return numbers.congruent_list(rng, rng.choice(ints), exact)
    lo, hi = min(ints) - 5, max(ints) + 5
    lo = max(lo, 0) if nonneg else lo
    n = rng.randint(0, 5)
    return rng.sample(range(lo, max(hi, lo + n) + 1), n)


def _held(lists: list[Any]) -> list[Any]:
    """The distinct values the example lists hold (by repr), in first-seen order, at most 40."""
    return list({repr(x): x for v in lists for x in v}.values())[:40]


def _columns(args: tuple[Any, ...], examples: list[tuple[Any, ...]]) -> tuple[list[list[Any]], list[int], list[int]]:
    width = len(args)
    column = [[e[i] for e in examples if len(e) == width] for i in range(width)]
    ints = [i for i in range(width) if column[i] and all(type(v) is int for v in column[i])]
    strs = [i for i in range(width) if column[i] and all(isinstance(v, str) for v in column[i])]
    return column, ints, strs


def _value(column: list[Any], is_int: bool, is_str: bool, rng: random.Random, kind: str | None,
           nonneg: bool, exact: bool) -> Any:  # fmt: skip
    if is_int:
        return _int_value(rng, kind or rng.choice(_int_kinds(exact)), nonneg, exact)
    if is_str:
        return _str_value(column, rng, kind)
    return _list_value(column, rng, nonneg, kind, exact)


def _pair(
    kind: str, column_a: list[Any], column_b: list[Any], rng: random.Random, exact: bool
) -> tuple[Any, Any] | None:
    if kind == "common_factor":
        return numbers.common_factor_pair(rng)
    if kind in ("fibonacci", "lopsided"):
        a, b = numbers.fibonacci_pair(rng, exact) if kind == "fibonacci" else numbers.lopsided_pair(rng)
        return (a, b) if rng.random() < 0.5 else (b, a)
    return _str_pair(column_a, column_b, rng, kind)


def shaped(args: tuple[Any, ...], examples: list[tuple[Any, ...]], rng: random.Random,
           nonneg: tuple[bool, ...] = (), exact: bool = False) -> tuple[Any, ...]:  # fmt: skip
    """`args` (an example) with one argument, or a pair of them, replaced by a shaped value
    of a kind drawn for it (see the module docstring); `args` unchanged where no argument
    has one. `exact`: integers past 2**52 may be drawn (the reference is exact on them)."""
    column, ints, strs = _columns(args, examples)
    out = list(args)
    if len(ints) >= 2 and rng.random() < 0.3:
        i, j = rng.sample(ints, 2)
        out[i], out[j] = _pair(rng.choice(_int_pair_kinds(exact)), [], [], rng, exact)  # type: ignore[misc]
        return tuple(out)
    if len(strs) >= 2 and rng.random() < 0.5:
        i, j = rng.sample(strs, 2)
        pair = _str_pair(column[i], column[j], rng)
        if pair is not None:
            out[i], out[j] = pair
            return tuple(out)
    order = list(range(len(args)))
    rng.shuffle(order)
    for i in order:
        keep = nonneg[i] if i < len(nonneg) else False
        value = _value(column[i], i in ints, i in strs, rng, None, keep, exact)
        if value is not None:
            out[i] = value
            return tuple(out)
    return tuple(out)


def covering(examples: list[tuple[Any, ...]], rng: random.Random, nonneg: tuple[bool, ...] = (),
             exact: bool = False) -> list[tuple[Any, ...]]:  # fmt: skip
    """One input of every shaped kind each argument (and the first pair of integer or string
    arguments) can take, each an example with that argument replaced: drawn every step, so
    that no kind is left to the luck of a random choice among a dozen."""
    if not examples:
        return []
    column, ints, strs = _columns(examples[0], examples)
    out: list[tuple[Any, ...]] = []
    str_kinds = ("anagram", "twins", *(f"power_twins:{d}" for d in POWER_TWIN_DEGREES))
    for group, pair_kinds in ((ints, _int_pair_kinds(exact)), (strs, str_kinds)):
        if len(group) >= 2:
            i, j = group[:2]
            for kind in pair_kinds:
                pair = _pair(kind, column[i], column[j], rng, exact)
                if pair is not None:
                    args = list(rng.choice(examples))
                    args[i], args[j] = pair
                    out.append(tuple(args))
    each: list[list[tuple[Any, ...]]] = []  # per argument, then taken in turn
    for i in range(len(examples[0])):
        mine: list[tuple[Any, ...]] = []
        each.append(mine)
        keep = nonneg[i] if i < len(nonneg) else False
        kinds = (
            _int_kinds(exact) if i in ints else _str_kinds(column[i]) if i in strs else _list_kinds(column[i], exact)
        )
        rungs: list[list[Any]] = []  # per kind: its values (a ladder's rungs, each character)
        for kind in kinds:
            if i in ints:
                rungs.append(_int_ladder(rng, kind, keep, exact))
            elif kind == "machine_edges":  # a fuzzer's mix, then every value past one edge
                rungs.append([numbers.edge_list(rng, keep, exact), *numbers.past_edge_lists(rng, keep, exact)])
            elif i in strs and kind == "thue_morse":  # each length
                rungs.append([_str_value(column[i], rng, kind, str(d)) for d in THUE_MORSE_DEGREES])
            elif i in strs and (kind.startswith("foreign:") or kind == "wide_initial"):
                rungs.append([_str_value(column[i], rng, kind, c) for c in _characters(column[i], kind)])
            else:
                rungs.append([_value(column[i], i in ints, i in strs, rng, kind, keep, exact)])
        for k in range(max(map(len, rungs), default=0)):  # every kind's first value first
            for value in (r[k] for r in rungs if k < len(r)):
                if value is not None:
                    mine.append(_replaced(examples, rng, i, value))
    for k in range(max(map(len, each), default=0)):  # the arguments in turn: a cap cuts all alike
        out += [mine[k] for mine in each if k < len(mine)]
    # last (a cap cuts them first, not a kind above), each integer argument's prime squares
    # at round bounds, drawn after everything else so the rest is what it was without them
    late = [[_replaced(examples, rng, i, v) for v in numbers.round_prime_squares(rng)] for i in sorted(ints)]
    for k in range(max(map(len, late), default=0)):
        out += [mine[k] for mine in late if k < len(mine)]
    return out


def _replaced(examples: list[tuple[Any, ...]], rng: random.Random, i: int, value: Any) -> tuple[Any, ...]:
    args = list(rng.choice(examples))
    args[i] = value
    return tuple(args)


def _characters(values: list[Any], kind: str) -> list[str]:
    """Each foreign character of a foreign kind's class; for `wide_initial`, a case-changing
    letter (`ß`) where the examples lack that class, else one past ASCII, and beside it a
    symbol with case (`ⓐ`: upper() maps it, `\\w` and isalpha() do not see it)."""
    foreign = _foreign(_alphabet(values))
    if kind == "wide_initial":  # a letter whose title and upper case differ, where lacking
        cased = [c for k, c in foreign if k in ("special_case", "titlecase")]
        symbol = [c for k, c in foreign if k == "cased_symbol"]
        return (cased[:1] or [c for k, c in foreign if k in _WIDE][:1]) + symbol[:1]
    return [c for k, c in foreign if k == kind[8:]]
