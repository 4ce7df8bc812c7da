"""Inputs of a known shape for hidden tests (rlvr.tasks.shapes): the recogniser on
hand-worked inputs, and every generated input of each kind recognised as its shape,
within float-exact integers, the same for the same seed."""

from __future__ import annotations

import math
import random

import pytest

from rlvr.tasks.shape_features import shapes
from rlvr.tasks.shapes import covering, shaped


def _kinds(args: tuple, examples: list[tuple]) -> set[str]:
    return {str(s[2]) for s in shapes(args, examples)}


@pytest.mark.parametrize(
    ("args", "examples", "want"),
    [
        ((169,), [(4,)], {"square", "prime_square"}),  # 13 * 13: a loop to i * i < n misses it
        ((225,), [(4,)], {"square"}),  # 15 * 15: a loop that misses the root still finds 3
        ((170,), [(4,)], {"square_neighbour"}),  # one off a square
        ((65536,), [(4,)], {"square", "power_of_two"}),
        ((2047,), [(4,)], {"power_of_two_neighbour", "pseudoprime"}),  # 23 * 89, a strong pseudoprime to 2
        ((561,), [(4,)], {"pseudoprime"}),  # a Carmichael number
        ((3215031751,), [(4,)], {"pseudoprime"}),  # 151 * 751 * 28351: it has a small factor
        ((46349 * 46381,), [(4,)], {"no_small_factor"}),  # two primes past 46340
        ((46349 * 46349,), [(4,)], {"square", "prime_square", "no_small_factor"}),
        ((2**64,), [(4,)], {"square", "power_of_two", "machine_edge"}),
        ((-(2**63),), [(4,)], {"machine_edge"}),
        ((2**31 - 1,), [(4,)], {"power_of_two_neighbour", "machine_edge"}),
        ((10**40,), [(4,)], {"square", "power_of_ten", "machine_edge"}),
        ((190392490709135, 117669030460994), [(4, 6)], {"fibonacci"}),  # F(70), F(69)
        ((117669030460994, 190392490709135 + 2), [(4, 6)], set()),
        ((2**45 + 1,), [(4,)], {"power_of_two_neighbour"}),
        ((10,), [(4,)], set()),
        ((1000,), [(4,)], {"power_of_ten"}),
        ((999999999999999,), [(4,)], {"power_of_ten_neighbour"}),  # where float log10 rounds up
        ((1234,), [(4,)], set()),
        ((102, 104), [(4, 6)], {"common_factor"}),  # gcd 2, cofactors 51 and 52
        ((12, 18), [(4, 6)], set()),  # cofactors 2 and 3: nothing a search to 50 misses
        (("a" * 10 + "b",), [("ab",)], {"run"}),
        (("a" * 100,), [("ab",)], {"run", "long_run"}),
        (("\u0100" * 12,), [("ab",)], {"run", "wide_run", "wide_initial", "foreign"}),  # a run past Latin-1
        (("a" * 64 + "bc" + "a" * 64,), [("abc",)], {"run", "near_palindrome", "long_near_palindrome"}),
        (("ab\u0416a\u0101ba",), [("ab",)], {"wide_palindrome", "foreign"}),  # mirrored, past Latin-1
        (("\u00dftra\u00dfe",), [("strae",)], {"wide_initial", "foreign"}),
        (("abcdxcba",), [("ab",)], {"near_palindrome"}),  # mismatch inside the outer three pairs
        (("xbcddcba",), [("ab",)], set()),  # the mismatch is the outer pair: any check sees it
        (("abcdDcba",), [("aB",)], {"near_palindrome_case"}),  # a palindrome but for case
        (("abcdDcba",), [("ab",)], {"near_palindrome_case", "foreign"}),  # and no example shows a capital
        (("a b",), [("ab",), ("ba",)], {"foreign"}),  # a space, which no example has
        (("a b",), [("a c",)], set()),
        (("caf\u00e9",), [("cafe",)], {"foreign"}),
        (("a\nb",), [("a b",)], {"foreign"}),  # a newline where the examples have only spaces
        (("a\x85b",), [("a b",)], {"foreign"}),  # NEXT LINE: whitespace to Unicode and str.split()
        (("a\u2028b",), [("a b",)], {"foreign"}),  # LINE SEPARATOR
        (("caf\u00e9",), [("na\u00efve",)], set()),  # Latin-1, as the examples are
        (("\u0416a",), [("na\u00efve",)], {"foreign", "wide_initial"}),  # past Latin-1, first
        (("stra\u00dfe",), [("na\u00efve",)], {"foreign"}),  # a letter whose upper case is two
        (("\u4e2d\u6587",), [("\u65e5\u672c",)], set()),  # letters without case, as the examples'
        (("(()]",), [("()",)], {"crossed_brackets"}),
        (("(]",), [("()",)], set()),  # adjacent: the closer follows its opener
        (("([)]",), [("()",)], set()),  # crossed, but right after its opener (neighbours draws these)
        (("listen", "silent"), [("ab", "ba")], {"anagram"}),
        (("aabcc", "abbbc"), [("ab", "ba")], {"checksum_twin"}),  # same length, set and code sum
        (("aehl", "bcjk"), [("ab", "ba")], {"power_twins"}),  # offsets {0,4,7,11}, {1,2,9,10}: 3 powers agree
        (("aehl", "bcjl"), [("ab", "ba")], set()),
        ((3, 2**1000 + 7), [(4, 6)], {"lopsided", "machine_edge"}),  # Euclid: a step; a round budget: not done
        ((2**300 + 7, 113), [(4, 6)], {"machine_edge"}),  # the small one is not below 100
        (([-(2**63), -(2**63) - 2],), [([1, -2],)], {"distinct", "machine_edges", "past_edge"}),  # a sentinel's side
        (([2**31 - 1, 2**31],), [([1, 2],)], {"distinct", "machine_edges", "past_edge"}),
        (([5, 2**31],), [([1, 2],)], {"distinct", "machine_edges"}),  # one value inside the edge
        (([7, 7 + 2**61 - 1],), [([1, 2],)], {"distinct", "machine_edges", "congruent"}),  # a fingerprint's twins
        (([7, 7 + 10**9 + 7, 3],), [([1, 2],)], {"distinct", "congruent"}),
        (([3, 1, 2],), [([1, 2],)], {"distinct"}),
        (([3, 3],), [([1, 2],)], set()),
        (([1, 2, 2],), [([1, 2],)], {"repeats"}),  # a value repeated, as in pairs counted by value
        ((["x", "y", "x"],), [(["x", "y"],)], {"repeats"}),
        (([[[1, 2]], [3]],), [([[1, 2], [3]],)], {"deeper"}),
    ],
)
def test_shapes_names_what_an_input_has(args: tuple, examples: list[tuple], want: set[str]) -> None:
    assert _kinds(args, examples) == want


@pytest.mark.parametrize(
    ("examples", "expect"),
    [
        (
            [(4,), (9,), (0,)],
            {
                "square",
                "prime_square",
                "power_of_two",
                "power_of_ten",
                "pseudoprime",
                "no_small_factor",
                "machine_edge",
            },
        ),
        (
            [(4, 6), (3, 5)],
            {"square", "prime_square", "power_of_two", "power_of_ten", "common_factor", "fibonacci"},
        ),
        ([("()",), ("([]{})",), ("(]",)], {"run", "near_palindrome", "crossed_brackets", "foreign"}),
        (
            [("abcba",), ("xyz",)],
            {
                "run",
                "long_run",
                "near_palindrome",
                "near_palindrome_case",
                "foreign",
                "long_near_palindrome",
                "wide_run",
                "wide_palindrome",
                "wide_initial",
            },
        ),
        ([("listen", "silent"), ("abc", "abd")], {"anagram", "checksum_twin"}),
        ([([1, 2, 3],), ([4, 5],)], {"distinct", "repeats", "machine_edges"}),
        ([(["a", "b"],), (["c"],)], {"repeats"}),
        ([([[1, 2], [3]],), ([[1], [2, [3]]],)], {"deeper"}),
    ],
)
def test_every_shape_of_an_arguments_kind_is_drawn_and_recognised(examples: list[tuple], expect: set[str]) -> None:
    rng = random.Random(3)
    nonneg = tuple(all(type(e[i]) is not int or e[i] >= 0 for e in examples) for i in range(len(examples[0])))
    seen: set[str] = set()
    for _ in range(300):
        args = shaped(rng.choice(examples), examples, rng, nonneg)
        assert len(args) == len(examples[0])
        for a in args:
            assert type(a) is not int or 0 <= a <= 2**52 + 1  # float-exact, and never negative here
        seen |= _kinds(args, examples)
    assert expect <= seen
    one, two = random.Random(7), random.Random(7)
    assert [shaped(examples[0], examples, one, nonneg) for _ in range(5)] == [
        shaped(examples[0], examples, two, nonneg) for _ in range(5)
    ]


def test_primality_is_exact_where_squares_are_drawn() -> None:
    from rlvr.tasks.numbers import is_prime as _is_prime

    small = [n for n in range(2, 5000) if all(n % d for d in range(2, int(n**0.5) + 1))]
    assert [n for n in range(5000) if _is_prime(n)] == small
    # strong pseudoprimes to the first bases, Carmichael numbers, and primes near 2**26
    for n in (2047, 1373653, 25326001, 3215031751, 561, 41041, 3825123056546413051):
        assert not _is_prime(n)
    assert _is_prime(67108859) and not _is_prime(67108863)


def test_each_class_of_foreign_character_is_drawn() -> None:
    rng = random.Random(5)
    examples = [("hello world",), ("abc",)]
    seen: set[str] = set()
    for _ in range(3000):
        seen |= {str(f[3]) for f in shapes(shaped(examples[0], examples, rng), examples) if f[2] == "foreign"}
    assert seen == {
        "punctuation", "digit", "non_ascii", "newline", "non_latin1",
        "special_case", "titlecase", "upper", "rare_space", "carriage_return", "surrogate",
        "regional", "cased_symbol", "folds_to_ascii",
    }  # fmt: skip


def test_an_argument_of_no_kind_with_a_shape_is_left_as_it_was() -> None:
    examples = [(True,), (False,)]
    assert shaped((True,), examples, random.Random(0)) == (True,)


@pytest.mark.parametrize(
    ("examples", "expect"),
    [
        (
            [(4,), (9,)],
            {
                "square",
                "prime_square",
                "power_of_two",
                "power_of_ten",
                "pseudoprime",
                "no_small_factor",
                "machine_edge",
            },
        ),
        ([(4, 6), (3, 5)], {"common_factor", "fibonacci", "lopsided", "pseudoprime", "machine_edge"}),
        (
            [("abcba",), ("xyz",)],
            {
                "run",
                "long_run",
                "near_palindrome",
                "near_palindrome_case",
                "long_near_palindrome",
                "wide_run",
                "wide_palindrome",
                "wide_initial",
                "foreign",
            },
        ),
        ([("listen", "silent"), ("abc", "abd")], {"anagram", "checksum_twin", "power_twins"}),
        ([([1, 2, 3],), ([4, 5],)], {"distinct", "repeats", "machine_edges", "past_edge", "congruent"}),
        ([([1, -2, 3],), ([4, 5],)], {"past_edge"}),
    ],
)
def test_covering_draws_every_kind_each_step(examples: list[tuple], expect: set[str]) -> None:
    """One draw of `covering` holds an input of every kind, where a random choice of kind
    reaches each only by luck; and every foreign class the examples lack, each once."""
    drawn = covering(examples, random.Random(11), exact=True)
    kinds = {k.removesuffix("_neighbour") for a in drawn for k in _kinds(a, examples)}  # a power or one off it
    assert expect <= kinds
    foreign = [{str(f[3]) for f in shapes(a, examples) if f[2] == "foreign"} for a in drawn]
    if isinstance(examples[0][0], str):
        assert {
            "space",
            "punctuation",
            "digit",
            "non_ascii",
            "newline",
            "non_latin1",
            "special_case",
            "titlecase",
            "upper",
            "carriage_return",
            "surrogate",
            "regional",
            "cased_symbol",
            "folds_to_ascii",
        } <= set().union(*foreign)
    assert drawn == covering(examples, random.Random(11), exact=True)


def test_integers_past_float_exactness_only_where_the_reference_is_exact() -> None:
    examples = [(4,), (9,)]
    wide = [a for _ in range(20) for (a,) in covering(examples, random.Random(_), nonneg=(True,), exact=True)]
    narrow = [a for _ in range(20) for (a,) in covering(examples, random.Random(_), nonneg=(True,))]
    assert max(wide) > 2**64 and max(narrow) <= 2**52 and min(narrow + wide) >= 0
    signed = [a for _ in range(20) for (a,) in covering([(-4,), (9,)], random.Random(_), exact=True)]
    assert min(signed) <= -(2**53)


def test_power_twins_agree_on_every_power_up_to_their_degree_and_are_not_anagrams() -> None:
    from rlvr.tasks.twins import POWER_TWIN_DEGREES, power_twins

    for degree in POWER_TWIN_DEGREES:
        u, w = power_twins(list("abc"), degree, random.Random(degree))
        assert len(u) == len(w) == 2**degree and sorted(u) != sorted(w)
        sums = [(sum(ord(c) ** k for c in u), sum(ord(c) ** k for c in w)) for k in range(1, degree + 2)]
        assert all(a == b for a, b in sums[:degree]) and sums[degree][0] != sums[degree][1]
    assert set(power_twins(list("abc"), 3, random.Random(0))[0]) <= set("abcdefghijklmnop")
    assert set(power_twins(list("ABC"), 3, random.Random(0))[0]) <= set("ABCDEFGHIJKLMNOP")


def test_the_ladders_draw_each_rung_every_step() -> None:
    """A kind whose value and its neighbour catch different shortcuts draws both each step,
    where one drawn at random reached a step by a coin: squares and their neighbours past
    float exactness (a root with a step budget), the widest power of ten less one (float
    log10), every list past one side of a word's edge on both sides where the examples
    are signed."""
    from rlvr.tasks.numbers import past_edge_lists

    for seed in range(5):
        drawn = [a for (a,) in covering([(4,), (9,)], random.Random(seed), nonneg=(True,), exact=True)]
        big = [a for a in drawn if a > 2**120]
        assert any(math.isqrt(a) ** 2 == a for a in big)
        assert any(math.isqrt(a - 1) ** 2 == a - 1 or math.isqrt(a + 1) ** 2 == a + 1 for a in big)  # a neighbour
        assert 10**15 - 1 in drawn and 10**15 in drawn
        lists = past_edge_lists(random.Random(seed), nonneg=False, exact=True)
        assert any(all(x <= -(2**63) for x in v) for v in lists) and any(all(x >= 2**64 - 1 for x in v) for v in lists)
        assert all(x >= 0 for v in past_edge_lists(random.Random(seed), nonneg=True, exact=True) for x in v)


def test_an_argument_is_signed_where_any_integer_of_its_examples_is_negative_at_any_depth() -> None:
    from rlvr.tasks.neighbours import nonnegative

    assert nonnegative([(1, [2, 3], "a"), (0, [[4]], "b")]) == (True, True, True)
    assert nonnegative([(1, [2, -3], "a"), (0, [[4]], "b")]) == (True, False, True)
    assert nonnegative([(1, [[2]]), (-1, [[-4]])]) == (False, False)
    assert nonnegative([]) == ()


def test_a_signed_list_argument_meets_every_value_shifted_up_and_down_with_each_pairs_sum_kept() -> None:
    from rlvr.tasks.numbers import spread_list

    spread = spread_list([11, 1, 6], random.Random(0))
    m = spread[0] - 11
    assert m >= 10**4 and spread == [11 + m, 1 + m, 6 + m, 11 - m, 1 - m, 6 - m]
    assert sum(1 for i, a in enumerate(spread) for b in spread[i + 1 :] if a + b == 12) == 3  # 11+1 twice, 6+6
    examples = [([1, 2],), ([-6, 11, 2],)]
    drawn = [a for (a,) in covering(examples, random.Random(1))]
    assert any(len(v) == 8 and min(v) <= -(10**4) and max(v) >= 10**4 for v in drawn)
    nonneg = [a for (a,) in covering([([1, 2],), ([6, 11, 2],)], random.Random(1), nonneg=(True,))]
    assert all(x >= 0 for v in nonneg for x in v)


def test_thue_morse_words_of_128_and_2048_letters_are_drawn_each_step_and_named() -> None:
    from rlvr.tasks.numbers import pseudoprimes
    from rlvr.tasks.twins import is_thue_morse, thue_morse

    word = thue_morse("a", "b", 7)
    assert len(word) == 128 and word != word[::-1] and is_thue_morse(word) and not is_thue_morse(word[:-1] + "a")
    assert "thue_morse" in _kinds((word,), [("ab",), ("ba",)])
    drawn = [a for (a,) in covering([("abba",), ("abc",)], random.Random(5))]
    assert sorted(len(a) for a in drawn if is_thue_morse(a)) == [128, 2048]
    assert 3825123056546413051 in pseudoprimes(random.Random(0), exact=True)  # fools 2..23, a factor of 149491


def test_whitespace_past_the_usual_six_is_its_own_class_and_python_only_separators_are_never_drawn() -> None:
    from rlvr.tasks.shapes import _char_class, _foreign

    assert {_char_class(c) for c in "\x1c\x1f\x85\xa0\u2028\u3000"} == {"rare_space"}
    assert _char_class(" ") == "space" and _char_class("\t") == "newline"
    drawn = [c for k, c in _foreign(list("ab ")) if k == "rare_space"]
    assert drawn == ["\x85"]  # \x1c-\x1f: whitespace to Python alone, not to Unicode
    assert all(len(f"a{c}b".split()) == 2 for c in drawn)


def test_prime_squares_come_at_every_round_bound_each_step() -> None:
    """A trial division by the primes below 1,000, then "no factor below the table: prime"
    for anything under 2**20 (blind set 7), is wrong only on a prime square between the
    table's bound and its square: the first prime past each power of ten gives one every step."""
    from rlvr.tasks.numbers import is_prime, prime_above, round_prime

    def shortcut(n: int) -> bool:
        small = [p for p in range(2, 1000) if is_prime(p)]
        if any(n % p == 0 for p in small):
            return n in small
        return n >= 2 and (n < 1 << 20 or is_prime(n))

    for seed in range(3):
        drawn = [a for (a,) in covering([(4,), (7,)], random.Random(seed), nonneg=(True,))]
        assert {1009**2, 10007**2, 100003**2} <= set(drawn)
        assert any(shortcut(a) != is_prime(a) for a in drawn)
        assert all(a <= 2**52 for a in drawn)
        names = {f[2:] for a in drawn for f in shapes((a,), [(4,), (7,)]) if f[2] == "prime_square"}
        assert {("prime_square", (4, True)), ("prime_square", (5, True))} <= names  # each bound a shape of its own
        # last, so that a cap cuts them rather than another kind
        assert drawn[-7:-1] == [prime_above(10**e) ** 2 for e in range(2, 8)]
        assert round_prime(math.isqrt(drawn[-1])) and math.isqrt(drawn[-1]) ** 2 == drawn[-1]


def test_units_of_two_characters_and_symbols_with_case_are_drawn_where_the_examples_lack_them() -> None:
    """Blind set 7's rules fitted to the characters a writer thought of: CRLF kept as one
    unit, a flag's two regional indicators kept in order, surrogate pairs joined, a regex
    that upper-cases a word's first `\\w` (a symbol with case is not one); each is wrong
    on an input of each step's covering draw."""
    import re

    def crlf(s: str) -> str:
        return "\r\n".join(p[::-1] for p in reversed(s.split("\r\n")))

    def flags(s: str) -> str:
        out, i = [], len(s) - 1
        while i >= 0:
            if "\U0001f1e6" <= s[i] <= "\U0001f1ff" and i > 0 and "\U0001f1e6" <= s[i - 1] <= "\U0001f1ff":
                out.append(s[i - 1] + s[i])
                i -= 2
            else:
                out.append(s[i])
                i -= 1
        return "".join(out)

    def pairs(s: str) -> int:
        return len(s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass"))

    def capitalize(s: str) -> str:
        return re.sub(r"(^|(?<= ))(\w)", lambda m: m.group(2).upper(), s)

    for seed in range(3):
        words = [a for (a,) in covering([("hello world",), ("abc",)], random.Random(seed))]
        assert any(crlf(s) != s[::-1] for s in words) and any(flags(s) != s[::-1] for s in words)
        assert any(pairs(s) != len(s) for s in words)
        honest = [" ".join(w[:1].upper() + w[1:] for w in s.split(" ")) for s in words]
        assert any(capitalize(s) != h for s, h in zip(words, honest, strict=True))
    # an example that already shows a class is not drawn it again
    assert not [c for k, c in _foreign_of("a\r\nb") if k == "carriage_return"]


def _foreign_of(text: str) -> list[tuple[str, str]]:
    from rlvr.tasks.shapes import _foreign

    return _foreign(sorted(set(text)))
