"""Generator of the bundled Python function-writing tasks.

Each family is a described function with a reference solution, parameterised by
constants (so one family yields several distinct tasks: `add_7`, `add_12`, ...) and a
list of test inputs. Expected outputs are computed by running the reference solution
here, at generation time; the resulting asserts are what the sandbox checks. The output
is deterministic: `python -m rlvr.tasks.pyfuncs` rewrites `data/python_functions.jsonl`
byte for byte the same.

Difficulty: 1 = a one-line function, 2 = a short loop or a standard algorithm,
3 = several cases or a less common algorithm.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.types import Task

DATA = Path(__file__).parent / "data" / "python_functions.jsonl"


@dataclass(frozen=True)
class Family:
    name: str  # function name; may use {k}
    args: str  # parameter list, e.g. "x" or "s, c"
    difficulty: int
    doc: str  # what the function does; may use {k}
    ref: str  # the body of the reference solution; may use {k}
    inputs: tuple[tuple[Any, ...], ...]
    params: tuple[Any, ...] = (None,)


def _fam(
    name: str, args: str, d: int, doc: str, ref: str, inputs: Iterable[Any], params: Iterable[Any] = (None,)
) -> Family:
    ins = tuple(i if isinstance(i, tuple) else (i,) for i in inputs)
    return Family(name, args, d, doc, ref, ins, tuple(params))


INTS = (0, 1, 2, 5, -3, 10, 17, 100)
WORDS = ("hello", "", "abc", "racecar", "Python", "a b c", "banana", "xyz123")
LISTS: tuple[list[int], ...] = ([1, 2, 3], [], [5], [-1, 4, 0, 9], [2, 2, 7, 3], [10, -10, 3, 8, 1])
NONEMPTY: tuple[list[int], ...] = ([1, 2, 3], [5], [-1, 4, 0, 9], [2, 2, 7, 3], [10, -10, 3, 8, 1], [-5, -2, -9])

FAMILIES: tuple[Family, ...] = (
    # ---- difficulty 1: one expression, a constant varies
    _fam("add_{k}", "x", 1, "returns x plus {k}", "return x + {k}", INTS, range(2, 21)),
    _fam("times_{k}", "x", 1, "returns x multiplied by {k}", "return x * {k}", INTS, range(2, 16)),
    _fam("minus_{k}", "x", 1, "returns x minus {k}", "return x - {k}", INTS, range(1, 16)),
    _fam(
        "is_multiple_of_{k}",
        "n",
        1,
        "returns True if the integer n is divisible by {k}, else False",
        "return n % {k} == 0",
        (0, 3, 4, 6, 7, 10, 12, 15, 21, 35, -6),
        range(2, 13),
    ),
    _fam("power_{k}", "x", 1, "returns x raised to the power {k}", "return x ** {k}", (0, 1, 2, 3, -2, 5), range(2, 9)),
    _fam(
        "first_{k}_chars",
        "s",
        1,
        "returns the first {k} characters of the string s (all of s if it is shorter)",
        "return s[:{k}]",
        WORDS,
        range(1, 9),
    ),
    _fam(
        "last_{k}_chars",
        "s",
        1,
        "returns the last {k} characters of the string s (all of s if it is shorter)",
        "return s[-{k}:] if {k} <= len(s) else s",
        WORDS,
        range(1, 9),
    ),
    _fam(
        "repeat_{k}",
        "s",
        1,
        "returns the string s repeated {k} times",
        "return s * {k}",
        ("ab", "", "x", "hi "),
        range(2, 9),
    ),
    _fam(
        "is_greater_than_{k}",
        "x",
        1,
        "returns True if x is greater than {k}, else False",
        "return x > {k}",
        INTS,
        (0, 1, 2, 3, 5, 7, 10, 20, 50, 100),
    ),
    _fam(
        "count_char_{k}",
        "s",
        1,
        "returns how many times the character '{k}' occurs in the string s",
        "return s.count('{k}')",
        ("banana", "apple", "", "aaa", "bob", "mississippi", "abcabc"),
        ("a", "b", "c", "e", "i", "l", "m", "n", "o", "p", "r", "s", "t"),
    ),
    _fam("sum_list", "lst", 1, "returns the sum of the numbers in the list lst", "return sum(lst)", LISTS),
    _fam("max_of_list", "lst", 1, "returns the largest number in the non-empty list lst", "return max(lst)", NONEMPTY),
    _fam("min_of_list", "lst", 1, "returns the smallest number in the non-empty list lst", "return min(lst)", NONEMPTY),
    _fam("reverse_string", "s", 1, "returns the string s reversed", "return s[::-1]", WORDS),
    _fam("to_upper", "s", 1, "returns the string s in upper case", "return s.upper()", WORDS),
    _fam("string_length", "s", 1, "returns the number of characters in the string s", "return len(s)", WORDS),
    _fam("is_even", "n", 1, "returns True if the integer n is even, else False", "return n % 2 == 0", INTS),
    _fam("absolute_value", "x", 1, "returns the absolute value of x", "return abs(x)", INTS + (-100,)),
    _fam("square", "x", 1, "returns x squared", "return x * x", INTS),
    _fam("list_length", "lst", 1, "returns the number of elements in the list lst", "return len(lst)", LISTS),
    _fam("first_element", "lst", 1, "returns the first element of the non-empty list lst", "return lst[0]", NONEMPTY),
    _fam("last_element", "lst", 1, "returns the last element of the non-empty list lst", "return lst[-1]", NONEMPTY),
    _fam(
        "concat",
        "a, b",
        1,
        "returns the two strings a and b joined together",
        "return a + b",
        (("ab", "cd"), ("", "x"), ("hello", " world"), ("1", "2")),
    ),
    _fam("add_numbers", "a, b", 1, "returns the sum of a and b", "return a + b", ((1, 2), (0, 0), (-5, 5), (10, 32))),
    _fam(
        "max_of_two",
        "a, b",
        1,
        "returns the larger of the two numbers a and b",
        "return max(a, b)",
        ((1, 2), (5, 3), (-1, -7), (4, 4)),
    ),
    _fam(
        "is_empty", "lst", 1, "returns True if the list lst has no elements, else False", "return len(lst) == 0", LISTS
    ),
    _fam(
        "celsius_to_fahrenheit",
        "c",
        1,
        "converts a temperature c in degrees Celsius to Fahrenheit (c * 9 / 5 + 32)",
        "return c * 9 / 5 + 32",
        (0, 100, -40, 37, 20),
    ),
    _fam(
        "mod_{k}",
        "x",
        1,
        "returns the remainder of the non-negative integer x divided by {k}",
        "return x % {k}",
        (0, 1, 7, 10, 23, 100),
        range(2, 10),
    ),
    _fam(
        "floor_div_{k}",
        "x",
        1,
        "returns x divided by {k}, rounded down to an integer",
        "return x // {k}",
        (0, 1, 7, 10, 23, 100, -7),
        range(2, 8),
    ),
    _fam(
        "cap_at_{k}",
        "x",
        1,
        "returns x, but never more than {k} (the smaller of x and {k})",
        "return min(x, {k})",
        INTS,
        (1, 3, 5, 10, 20, 50, 100),
    ),
    _fam(
        "is_less_than_{k}",
        "x",
        1,
        "returns True if x is less than {k}, else False",
        "return x < {k}",
        INTS,
        (0, 1, 3, 5, 10, 50, 100),
    ),
    _fam(
        "contains_{k}",
        "lst",
        1,
        "returns True if the list lst contains the number {k}, else False",
        "return {k} in lst",
        LISTS,
        (0, 1, 2, 3, 4, 5, 7, 9),
    ),
    _fam(
        "starts_with_{k}",
        "s",
        1,
        "returns True if the string s starts with the letter '{k}', else False",
        "return s.startswith('{k}')",
        WORDS + ("apple", "tree", "bob", "cat", "sun", "rock", "pear"),
        ("a", "b", "c", "h", "p", "r", "s", "t"),
    ),
    _fam(
        "ends_with_{k}",
        "s",
        1,
        "returns True if the string s ends with the letter '{k}', else False",
        "return s.endswith('{k}')",
        WORDS + ("pizza", "tree", "gas", "bad", "yet", "toy"),
        ("a", "d", "e", "s", "t", "y"),
    ),
    _fam(
        "swap_case",
        "s",
        1,
        "returns s with upper-case letters made lower case and lower-case letters made upper case",
        "return s.swapcase()",
        WORDS,
    ),
    _fam(
        "greet",
        "name",
        1,
        "returns the greeting 'Hello, NAME!' for the given name, e.g. greet('Ann') == 'Hello, Ann!'",
        "return 'Hello, ' + name + '!'",
        ("Ann", "Bob", "", "World"),
    ),
    _fam(
        "triangle_area",
        "base, height",
        1,
        "returns the area of a triangle with the given base and height (base * height / 2)",
        "return base * height / 2",
        ((3, 4), (10, 5), (0, 7), (1, 1)),
    ),
    _fam(
        "perimeter_of_square",
        "side",
        1,
        "returns the perimeter of a square with the given side length",
        "return 4 * side",
        (0, 1, 2.5, 10),
    ),
    # ---- difficulty 2: a loop, a comprehension or a standard algorithm
    _fam(
        "count_vowels",
        "s",
        2,
        "returns the number of vowels (a, e, i, o, u, upper or lower case) in the string s",
        "return sum(ch in 'aeiouAEIOU' for ch in s)",
        WORDS + ("AEIOU", "rhythm"),
    ),
    _fam(
        "is_palindrome",
        "s",
        2,
        "returns True if the string s reads the same forwards and backwards, else False",
        "return s == s[::-1]",
        WORDS + ("abba", "ab"),
    ),
    _fam(
        "factorial",
        "n",
        2,
        "returns n! for a non-negative integer n (0! is 1)",
        "r = 1\n    for i in range(2, n + 1):\n        r *= i\n    return r",
        (0, 1, 2, 5, 7, 10),
    ),
    _fam(
        "fibonacci",
        "n",
        2,
        "returns the n-th Fibonacci number, with fibonacci(0) == 0 and fibonacci(1) == 1",
        "a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a",
        (0, 1, 2, 3, 7, 10, 20),
    ),
    _fam(
        "sum_of_digits",
        "n",
        2,
        "returns the sum of the decimal digits of the non-negative integer n",
        "return sum(int(d) for d in str(n))",
        (0, 7, 12, 999, 1001, 123456),
    ),
    _fam(
        "count_words",
        "s",
        2,
        "returns the number of words in the string s (words are separated by whitespace)",
        "return len(s.split())",
        ("hello world", "", "one", "a b  c", "  spaced   out  "),
    ),
    _fam(
        "filter_even",
        "lst",
        2,
        "returns a new list with only the even numbers of lst, in order",
        "return [x for x in lst if x % 2 == 0]",
        LISTS,
    ),
    _fam(
        "filter_odd",
        "lst",
        2,
        "returns a new list with only the odd numbers of lst, in order",
        "return [x for x in lst if x % 2 != 0]",
        LISTS,
    ),
    _fam(
        "square_all",
        "lst",
        2,
        "returns a new list with every number of lst squared",
        "return [x * x for x in lst]",
        LISTS,
    ),
    _fam(
        "add_{k}_to_all",
        "lst",
        2,
        "returns a new list with {k} added to every number of lst",
        "return [x + {k} for x in lst]",
        LISTS,
        (1, 2, 3, 4, 5, 7, 10, 20),
    ),
    _fam(
        "count_greater_than_{k}",
        "lst",
        2,
        "returns how many numbers in the list lst are greater than {k}",
        "return sum(1 for x in lst if x > {k})",
        LISTS,
        (0, 1, 2, 3, 4, 5, 10),
    ),
    _fam(
        "average",
        "lst",
        2,
        "returns the arithmetic mean of the non-empty list of numbers lst",
        "return sum(lst) / len(lst)",
        NONEMPTY,
    ),
    _fam(
        "is_prime",
        "n",
        2,
        "returns True if the integer n is a prime number, else False",
        "if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n        if n % i == 0:\n            return False\n        i += 1\n    return True",
        (0, 1, 2, 3, 4, 9, 13, 25, 29, 97, 100),
    ),
    _fam(
        "gcd",
        "a, b",
        2,
        "returns the greatest common divisor of the positive integers a and b",
        "while b:\n        a, b = b, a % b\n    return a",
        ((12, 18), (7, 5), (100, 10), (9, 9), (1, 50)),
    ),
    _fam(
        "reverse_list",
        "lst",
        2,
        "returns a new list with the elements of lst in reverse order",
        "return lst[::-1]",
        LISTS,
    ),
    _fam(
        "unique_sorted",
        "lst",
        2,
        "returns the distinct values of lst sorted in ascending order",
        "return sorted(set(lst))",
        LISTS + ([3, 1, 3, 1],),
    ),
    _fam(
        "capitalize_words",
        "s",
        2,
        "returns s with the first letter of every space-separated word in upper case and the rest unchanged",
        "return ' '.join(w[:1].upper() + w[1:] for w in s.split(' '))",
        ("hello world", "", "python is fun", "a"),
    ),
    _fam(
        "remove_char_{k}",
        "s",
        2,
        "returns the string s with every occurrence of the character '{k}' removed",
        "return s.replace('{k}', '')",
        ("banana", "apple", "", "aaa", "bob", "mission"),
        ("a", "b", "e", "i", "n", "o", "s"),
    ),
    _fam(
        "count_digits",
        "s",
        2,
        "returns how many characters of the string s are decimal digits",
        "return sum(ch.isdigit() for ch in s)",
        ("abc", "a1b2c3", "", "2024", "x9"),
    ),
    _fam(
        "product_list",
        "lst",
        2,
        "returns the product of the numbers in the list lst (1 for an empty list)",
        "r = 1\n    for x in lst:\n        r *= x\n    return r",
        LISTS,
    ),
    _fam(
        "multiply_all_by_{k}",
        "lst",
        2,
        "returns a new list with every number of lst multiplied by {k}",
        "return [x * {k} for x in lst]",
        LISTS,
        (2, 3, 4, 5, 7, 10),
    ),
    _fam(
        "running_sum",
        "lst",
        2,
        "returns the list of running totals of lst: element i is the sum of lst[0..i]",
        "out, t = [], 0\n    for x in lst:\n        t += x\n        out.append(t)\n    return out",
        LISTS,
    ),
    _fam(
        "to_binary",
        "n",
        2,
        "returns the binary representation of the non-negative integer n as a string without prefix",
        "return bin(n)[2:]",
        (0, 1, 2, 5, 10, 255),
    ),
    _fam(
        "count_multiples_of_{k}",
        "lst",
        2,
        "returns how many numbers in the list lst are divisible by {k}",
        "return sum(1 for x in lst if x % {k} == 0)",
        LISTS,
        (2, 3, 4, 5, 7),
    ),
    _fam(
        "sum_of_multiples_of_{k}_below",
        "n",
        2,
        "returns the sum of all positive multiples of {k} that are smaller than n",
        "return sum(range({k}, n, {k})) if n > {k} else 0",
        (0, 1, 10, 16, 50, 100),
        (3, 4, 5, 7),
    ),
    _fam(
        "every_{k}th",
        "lst",
        2,
        "returns every {k}-th element of lst starting with the first (lst[0], lst[{k}], ...)",
        "return lst[::{k}]",
        LISTS + ([1, 2, 3, 4, 5, 6, 7],),
        (2, 3, 4),
    ),
    _fam(
        "sum_first_{k}",
        "lst",
        2,
        "returns the sum of the first {k} elements of lst (all of them if lst is shorter)",
        "return sum(lst[:{k}])",
        LISTS,
        (1, 2, 3, 4, 5),
    ),
    _fam(
        "index_of_{k}",
        "lst",
        2,
        "returns the index of the first occurrence of {k} in lst, or -1 if it is absent",
        "return lst.index({k}) if {k} in lst else -1",
        LISTS,
        (0, 2, 3, 4, 7, 9),
    ),
    _fam(
        "replace_{k}_with_star",
        "s",
        2,
        "returns s with every character '{k}' replaced by '*'",
        "return s.replace('{k}', '*')",
        ("banana", "apple", "", "hello world", "eel", "mission"),
        ("a", "e", "i", "l", "n", "o", "s"),
    ),
    _fam(
        "count_uppercase",
        "s",
        2,
        "returns how many characters of s are upper-case letters",
        "return sum(ch.isupper() for ch in s)",
        WORDS + ("ABCdef", "HeLLo"),
    ),
    _fam(
        "remove_duplicates",
        "lst",
        2,
        "returns lst without repeated values, keeping the first occurrence of each, in order",
        "out = []\n    for x in lst:\n        if x not in out:\n            out.append(x)\n    return out",
        LISTS + ([3, 1, 3, 2, 1],),
    ),
    _fam(
        "is_perfect_square",
        "n",
        2,
        "returns True if the non-negative integer n is the square of an integer, else False",
        "r = int(n ** 0.5)\n    while r * r > n:\n        r -= 1\n    while (r + 1) * (r + 1) <= n:\n        r += 1\n    return r * r == n",
        (0, 1, 2, 4, 15, 16, 26, 49, 1000000),
    ),
    _fam(
        "sum_of_squares",
        "n",
        2,
        "returns 1*1 + 2*2 + ... + n*n for a non-negative integer n (0 for n = 0)",
        "return sum(i * i for i in range(1, n + 1))",
        (0, 1, 2, 3, 10),
    ),
    _fam(
        "triangular_number",
        "n",
        2,
        "returns the n-th triangular number 1 + 2 + ... + n (0 for n = 0)",
        "return n * (n + 1) // 2",
        (0, 1, 2, 5, 100),
    ),
    _fam(
        "number_of_digits",
        "n",
        2,
        "returns how many decimal digits the non-negative integer n has (1 for 0)",
        "return len(str(n))",
        (0, 5, 10, 999, 123456),
    ),
    _fam(
        "lcm",
        "a, b",
        2,
        "returns the least common multiple of the positive integers a and b",
        "x, y = a, b\n    while y:\n        x, y = y, x % y\n    return a * b // x",
        ((4, 6), (3, 5), (10, 10), (1, 7), (12, 18)),
    ),
    _fam(
        "middle_element",
        "lst",
        2,
        "returns the middle element of the non-empty list lst (for an even length, the element at index len(lst) // 2)",
        "return lst[len(lst) // 2]",
        NONEMPTY,
    ),
    _fam(
        "count_positive",
        "lst",
        2,
        "returns how many numbers in lst are strictly positive",
        "return sum(1 for x in lst if x > 0)",
        LISTS,
    ),
    _fam(
        "range_of_list",
        "lst",
        2,
        "returns the difference between the largest and the smallest number of the non-empty list lst",
        "return max(lst) - min(lst)",
        NONEMPTY,
    ),
    # ---- difficulty 3: several cases or a less common algorithm
    _fam(
        "second_largest",
        "lst",
        3,
        "returns the second largest distinct value in lst, or None if there is none",
        "u = sorted(set(lst))\n    return u[-2] if len(u) >= 2 else None",
        LISTS + ([4, 4],),
    ),
    _fam(
        "run_length_encode",
        "s",
        3,
        "returns the run-length encoding of s: each run of a repeated character becomes the character followed by the run length, e.g. 'aaab' -> 'a3b1'",
        "out = ''\n    i = 0\n    while i < len(s):\n        j = i\n        while j < len(s) and s[j] == s[i]:\n            j += 1\n        out += s[i] + str(j - i)\n        i = j\n    return out",
        ("aaab", "", "abc", "zzzzzz", "aabbaa"),
    ),
    _fam(
        "is_balanced",
        "s",
        3,
        "returns True if the brackets '()', '[]' and '{{}}' in s are balanced and properly nested, else False",
        "pairs = {{')': '(', ']': '[', '}}': '{{'}}\n    st = []\n    for ch in s:\n        if ch in '([{{':\n            st.append(ch)\n        elif ch in pairs:\n            if not st or st.pop() != pairs[ch]:\n                return False\n    return not st",
        ("()", "([]{{}})", "(]", "((", "", "a(b)c", ")("),
    ),
    _fam(
        "is_anagram",
        "a, b",
        3,
        "returns True if the strings a and b contain the same letters with the same counts (case-sensitive), else False",
        "return sorted(a) == sorted(b)",
        (("listen", "silent"), ("abc", "abd"), ("", ""), ("aab", "abb")),
    ),
    _fam(
        "rotate_left_{k}",
        "lst",
        3,
        "returns lst rotated left by {k} positions (wrapping around; an empty list stays empty)",
        "if not lst:\n        return []\n    r = {k} % len(lst)\n    return lst[r:] + lst[:r]",
        LISTS,
        (1, 2, 3, 4, 5),
    ),
    _fam(
        "caesar_shift_{k}",
        "s",
        3,
        "shifts every lowercase letter a-z of s forward by {k} places in the alphabet, wrapping z to a; other characters are unchanged",
        "return ''.join(chr((ord(c) - 97 + {k}) % 26 + 97) if 'a' <= c <= 'z' else c for c in s)",
        ("abc", "xyz", "hello world", "", "A-z"),
        (1, 2, 3, 5, 7, 10, 13),
    ),
    _fam(
        "longest_word",
        "s",
        3,
        "returns the longest whitespace-separated word of s (the first one if tied; '' if there is none)",
        "best = ''\n    for w in s.split():\n        if len(w) > len(best):\n            best = w\n    return best",
        ("the quick brown fox", "", "a bb cc", "hello"),
    ),
    _fam(
        "char_frequency",
        "s",
        3,
        "returns a dict mapping each character of s to the number of times it occurs",
        "d = {{}}\n    for ch in s:\n        d[ch] = d.get(ch, 0) + 1\n    return d",
        ("hello", "", "aab", "abcabc"),
    ),
    _fam(
        "flatten",
        "lists",
        3,
        "returns one list with the elements of the given list of lists, in order",
        "return [x for sub in lists for x in sub]",
        (([[1, 2], [3]],), ([],), ([[], [4]],), ([[1], [2], [3, 4, 5]],)),
    ),
    _fam(
        "chunk_{k}",
        "lst",
        3,
        "splits lst into consecutive chunks of {k} elements (the last chunk may be shorter) and returns the list of chunks",
        "return [lst[i:i + {k}] for i in range(0, len(lst), {k})]",
        LISTS,
        (2, 3, 4),
    ),
    _fam(
        "longest_common_prefix",
        "words",
        3,
        "returns the longest common prefix of the list of strings words ('' for an empty list)",
        "if not words:\n        return ''\n    p = words[0]\n    for w in words[1:]:\n        while not w.startswith(p):\n            p = p[:-1]\n    return p",
        ((["flower", "flow", "flight"],), ([],), (["dog", "racecar"],), (["same", "same"],)),
    ),
    _fam(
        "digital_root",
        "n",
        3,
        "repeatedly sums the decimal digits of the non-negative integer n until one digit remains, and returns it",
        "while n >= 10:\n        n = sum(int(d) for d in str(n))\n    return n",
        (0, 9, 38, 12345, 99999),
    ),
    _fam(
        "words_longer_than_{k}",
        "s",
        3,
        "returns the list of whitespace-separated words of s that have more than {k} characters, in order",
        "return [w for w in s.split() if len(w) > {k}]",
        ("the quick brown fox jumps", "", "a bb ccc dddd"),
        (1, 2, 3, 4, 5),
    ),
    _fam(
        "collatz_steps",
        "n",
        3,
        "returns how many steps the Collatz rule (n -> n / 2 if even, else 3n + 1) takes to reach 1 from the positive integer n",
        "c = 0\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n        c += 1\n    return c",
        (1, 2, 3, 6, 7, 27),
    ),
    _fam(
        "pairs_summing_to_{k}",
        "lst",
        3,
        "returns how many pairs of positions i < j have lst[i] + lst[j] == {k}",
        "return sum(1 for i in range(len(lst)) for j in range(i + 1, len(lst)) if lst[i] + lst[j] == {k})",
        LISTS + ([5, 5, 5],),
        (3, 5, 7, 10, 12),
    ),
    _fam(
        "to_roman",
        "n",
        3,
        "returns the Roman numeral for the integer n between 1 and 3999",
        "vals = [(1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'), (50, 'L'), (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')]\n    out = ''\n    for v, r in vals:\n        while n >= v:\n            out += r\n            n -= v\n    return out",
        (1, 4, 9, 14, 40, 90, 400, 1994, 3999),
    ),
    _fam(
        "transpose",
        "m",
        3,
        "returns the transpose of the rectangular matrix m given as a list of rows",
        "return [list(r) for r in zip(*m)]",
        (([[1, 2], [3, 4]],), ([[1, 2, 3]],), ([[1], [2]],)),
    ),
    _fam(
        "count_primes_below",
        "n",
        3,
        "returns how many prime numbers are smaller than n",
        "return sum(1 for m in range(2, n) if all(m % d for d in range(2, int(m ** 0.5) + 1)))",
        (0, 2, 3, 10, 30, 100),
    ),
)


def _call(fn_name: str, args: tuple[Any, ...]) -> str:
    return f"{fn_name}({', '.join(repr(a) for a in args)})"


def build_tasks() -> list[Task]:
    tasks: list[Task] = []
    for fam in FAMILIES:
        for k in fam.params:
            fmt = {"k": k} if k is not None else {}
            name = fam.name.format(**fmt)
            doc = fam.doc.format(**fmt)
            body = fam.ref.format(**fmt)
            reference = f"def {name}({fam.args}):\n    {body}\n"
            namespace: dict[str, Any] = {}
            exec(reference, namespace)  # trusted: our own reference solutions
            asserts = []
            for args in fam.inputs:
                expected = namespace[name](*[json.loads(json.dumps(a)) for a in args])
                asserts.append(f"assert {_call(name, args)} == {expected!r}")
            prompt = f"Write a Python function `{name}({fam.args})` that {doc}."
            tasks.append(
                Task(
                    id=f"py/{name}",
                    domain="python",
                    prompt=prompt,
                    tests={"format": "assert", "tests": asserts},
                    entry_point=name,
                    difficulty=fam.difficulty,
                    reference=reference,
                    metadata={"family": fam.name},
                )
            )
    ids = [t.id for t in tasks]
    if len(ids) != len(set(ids)):
        raise RuntimeError("duplicate task ids in the generator")
    return tasks


def write(path: Path = DATA) -> int:
    tasks = build_tasks()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for t in tasks:
            f.write(json.dumps(t.to_dict(), sort_keys=True) + "\n")
    return len(tasks)


if __name__ == "__main__":
    print(f"wrote {write()} tasks to {DATA}")
