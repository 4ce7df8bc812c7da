# ruff: noqa: E501  (the packages and their bugs are data, kept as written)
"""Generator of the bundled repository tasks (`data/repository.jsonl`) for the `repository`
domain.

Three small Python packages, each with its own pytest suite, are written out below in
their correct form. A task takes one package, plants one or two bugs in it (a textual
mutation of a line), and asks for a patch that makes the suite pass again; the package
directory is editable, the tests are not. The prompt shows the repository's files and
the failing tests as pytest reported them. When the file is written every task is
checked in the sandbox: the correct package passes, the buggy one fails, and the
reference patch (the diff back to the correct package) applied through the environment
scores 1.0. `python -m rlvr.tasks.generators.repogen` rewrites the file byte for byte.

Difficulty: 1 = the bug is in the function the failing test names; 2 = the failing tests
name one module and the bug lives in another; 3 = two bugs in two files.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlvr.envs.base import check_reply
from rlvr.envs.patching import make_patch
from rlvr.envs.repository import pytest_summary
from rlvr.tasks.loader import BUNDLED_DIR, write_tasks
from rlvr.types import Task

DATA = BUNDLED_DIR / "repository.jsonl"

TEXTKIT = {
    "README.md": "# textkit\n\nSmall text helpers: slugs, word counts, truncation, title case.\n",
    "textkit/__init__.py": "from textkit.slug import slugify\nfrom textkit.words import title_case, truncate, word_count\n",
    "textkit/normalize.py": '''import unicodedata


def strip_accents(text):
    """'Café' -> 'Cafe'."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def collapse_spaces(text):
    """Runs of whitespace become one space; no space at either end."""
    return " ".join(text.split())
''',
    "textkit/slug.py": '''import re

from textkit.normalize import strip_accents


def slugify(text, sep="-"):
    """Lowercase ASCII words of letters and digits, joined by sep."""
    text = strip_accents(text).lower()
    words = re.findall(r"[a-z0-9]+", text)
    return sep.join(words)
''',
    "textkit/words.py": '''from textkit.normalize import collapse_spaces


def word_count(text):
    text = collapse_spaces(text)
    return len(text.split(" ")) if text else 0


def truncate(text, width, ellipsis="..."):
    """At most width characters, the ellipsis included."""
    if len(text) <= width:
        return text
    return text[: max(0, width - len(ellipsis))] + ellipsis


def title_case(text, small=("a", "an", "the", "of", "and")):
    """Capitalise each word except small words after the first."""
    out = []
    for i, w in enumerate(collapse_spaces(text).split(" ")):
        if i > 0 and w.lower() in small:
            out.append(w.lower())
        else:
            out.append(w[:1].upper() + w[1:].lower())
    return " ".join(out)
''',
    "tests/test_textkit.py": """from textkit import slugify, title_case, truncate, word_count


def test_slugify_basic():
    assert slugify("Hello, World!") == "hello-world"


def test_slugify_accents_and_separator():
    assert slugify("Café Crème 2", sep="_") == "cafe_creme_2"


def test_word_count_spaces():
    assert word_count("  one\\ttwo   three \\n") == 3
    assert word_count("   ") == 0


def test_truncate():
    assert truncate("abcdefghij", 6) == "abc..."
    assert truncate("short", 10) == "short"


def test_title_case_small_words():
    assert title_case("the lord OF the rings") == "The Lord of the Rings"


def test_title_case_spacing():
    assert title_case("  war   and peace ") == "War and Peace"
""",
}

INVKIT = {
    "README.md": "# invkit\n\nAn in-memory inventory: stock in, stock out, value, low-stock report.\n",
    "invkit/__init__.py": "from invkit.models import Item\nfrom invkit.store import Inventory, OutOfStock\n",
    "invkit/models.py": """from dataclasses import dataclass


@dataclass
class Item:
    sku: str
    price: float
    qty: int = 0

    def value(self):
        return self.price * self.qty
""",
    "invkit/store.py": '''from invkit.models import Item


class OutOfStock(Exception):
    pass


class Inventory:
    def __init__(self):
        self.items = {}

    def add(self, sku, price, qty=1):
        """Stock in; the latest price wins. Returns the quantity now held."""
        if qty <= 0:
            raise ValueError("qty must be positive")
        item = self.items.get(sku)
        if item is None:
            self.items[sku] = Item(sku, price, qty)
        else:
            item.qty += qty
            item.price = price
        return self.items[sku].qty

    def remove(self, sku, qty=1):
        """Stock out; an item whose quantity reaches 0 is dropped."""
        item = self.items.get(sku)
        if item is None or item.qty < qty:
            raise OutOfStock(sku)
        item.qty -= qty
        if item.qty == 0:
            del self.items[sku]
        return qty

    def total_value(self):
        return round(sum(i.value() for i in self.items.values()), 2)

    def low_stock(self, threshold=5):
        """SKUs held in fewer than threshold units, sorted."""
        return sorted(s for s, i in self.items.items() if i.qty < threshold)
''',
    "tests/test_inventory.py": """import pytest

from invkit import Inventory, OutOfStock


def make():
    inv = Inventory()
    inv.add("apple", 0.5, 10)
    inv.add("pear", 0.75, 4)
    return inv


def test_add_accumulates_and_updates_price():
    inv = make()
    assert inv.add("apple", 0.6, 5) == 15
    assert inv.items["apple"].price == 0.6


def test_add_rejects_non_positive():
    with pytest.raises(ValueError):
        make().add("fig", 1.0, 0)


def test_remove_everything_drops_the_item():
    inv = make()
    assert inv.remove("pear", 4) == 4
    assert "pear" not in inv.items


def test_remove_too_many():
    with pytest.raises(OutOfStock):
        make().remove("pear", 5)


def test_total_value():
    assert make().total_value() == 8.0


def test_low_stock():
    inv = make()
    inv.add("kiwi", 1.0, 5)
    assert inv.low_stock() == ["pear"]
    assert inv.low_stock(threshold=11) == ["apple", "kiwi", "pear"]
""",
}

STATKIT = {
    "README.md": "# statkit\n\nDescriptive statistics for lists of numbers.\n",
    "statkit/__init__.py": "from statkit.central import mean, median, mode\nfrom statkit.spread import stdev, value_range, variance\n",
    "statkit/central.py": '''from collections import Counter


def mean(xs):
    if not xs:
        raise ValueError("mean of an empty list")
    return sum(xs) / len(xs)


def median(xs):
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of an empty list")
    if n % 2:
        return s[n // 2]
    return (s[n // 2 - 1] + s[n // 2]) / 2


def mode(xs):
    """The most common value; the smallest of those tied."""
    counts = Counter(xs)
    best = max(counts.values())
    return min(x for x, c in counts.items() if c == best)
''',
    "statkit/spread.py": '''import math

from statkit.central import mean


def variance(xs):
    """Sample variance (n - 1 in the denominator)."""
    if len(xs) < 2:
        raise ValueError("variance needs at least two values")
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def stdev(xs):
    return math.sqrt(variance(xs))


def value_range(xs):
    return max(xs) - min(xs)
''',
    "tests/test_stats.py": """import math

import pytest

from statkit import mean, median, mode, stdev, value_range, variance


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_median_odd_and_even():
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5


def test_mode_ties_take_the_smallest():
    assert mode([3, 1, 3, 1, 2]) == 1


def test_variance_and_stdev():
    assert variance([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(32 / 7)
    assert stdev([1, 3]) == pytest.approx(math.sqrt(2))


def test_variance_needs_two():
    with pytest.raises(ValueError):
        variance([1])


def test_value_range():
    assert value_range([5, -2, 7]) == 9
""",
}

REPOS = {"textkit": (TEXTKIT, "tests/test_textkit.py"), "invkit": (INVKIT, "tests/test_inventory.py")}
REPOS["statkit"] = (STATKIT, "tests/test_stats.py")


@dataclass(frozen=True)
class Bug:
    repo: str
    name: str
    difficulty: int
    edits: tuple[tuple[str, str, str], ...]  # (file, correct text, buggy text)


BUGS = [
    Bug("textkit", "fixed_separator", 1, (("textkit/slug.py", "return sep.join(words)", 'return "-".join(words)'),)),
    Bug("textkit", "truncate_width", 1, (("textkit/words.py", "width - len(ellipsis)", "width"),)),
    Bug("textkit", "title_first_word", 1, (("textkit/words.py", "if i > 0 and w.lower()", "if w.lower()"),)),
    Bug("textkit", "split_on_space", 2, (("textkit/normalize.py", "text.split())", 'text.split(" "))'),)),
    Bug("textkit", "accents_kept", 2, (("textkit/normalize.py", '"NFKD"', '"NFC"'),)),
    Bug(
        "textkit",
        "two_bugs",
        3,
        (
            ("textkit/slug.py", "[a-z0-9]+", "[a-z]+"),
            ("textkit/words.py", "if len(text) <= width", "if len(text) < width"),
        ),
    ),
    Bug("invkit", "remove_boundary", 1, (("invkit/store.py", "item.qty < qty:", "item.qty <= qty:"),)),
    Bug("invkit", "stale_price", 1, (("invkit/store.py", "item.price = price\n", "pass\n"),)),
    Bug("invkit", "low_stock_inclusive", 1, (("invkit/store.py", "i.qty < threshold", "i.qty <= threshold"),)),
    Bug("invkit", "value_adds", 2, (("invkit/models.py", "self.price * self.qty", "self.price + self.qty"),)),
    Bug(
        "invkit",
        "two_bugs",
        3,
        (
            (
                "invkit/store.py",
                "if item.qty == 0:\n            del self.items[sku]",
                "if item.qty < 0:\n            del self.items[sku]",
            ),
            ("invkit/models.py", "qty: int = 0", "qty: int = 1"),
        ),
    ),
    Bug("statkit", "median_even", 1, (("statkit/central.py", "(s[n // 2 - 1] + s[n // 2]) / 2", "s[n // 2]"),)),
    Bug("statkit", "population_variance", 1, (("statkit/spread.py", "/ (len(xs) - 1)", "/ len(xs)"),)),
    Bug("statkit", "mode_largest", 1, (("statkit/central.py", "return min(x for x", "return max(x for x"),)),
    Bug("statkit", "integer_mean", 2, (("statkit/central.py", "sum(xs) / len(xs)", "sum(xs) // len(xs)"),)),
    Bug(
        "statkit",
        "two_bugs",
        3,
        (
            ("statkit/central.py", "if n % 2:", "if n % 2 == 0:"),
            ("statkit/spread.py", "max(xs) - min(xs)", "max(xs) - max(xs)"),
        ),
    ),
]


def _plant(files: dict[str, str], bug: Bug) -> dict[str, str]:
    out = dict(files)
    for path, good, bad in bug.edits:
        if out[path].count(good) != 1:
            raise AssertionError(f"{bug.repo}/{bug.name}: {good!r} must occur once in {path}")
        out[path] = out[path].replace(good, bad)
    return out


def _prompt(repo: str, files: dict[str, str], test_file: str, failures: str) -> str:
    tree = "\n".join(f"  {p}" for p in sorted(files))
    shown = "\n\n".join(f"--- {p}\n{files[p]}" for p in sorted(files) if p.endswith(".py") and files[p].strip())
    return (
        f"The repository `{repo}` has failing tests.\n\nFiles:\n{tree}\n\n{shown}\n\n"
        f"Running pytest on {test_file}:\n{failures}\n\n"
        f"Fix the code under {repo}/ (the tests must not change). Answer with a unified diff "
        f"(--- a/PATH, +++ b/PATH, @@ hunks) in a ```diff code block."
    )


def _failures(files: dict[str, str], test_file: str) -> str:
    from rlvr.sandbox import execute

    others = {p: x for p, x in files.items() if p != test_file}
    result = execute("", {"format": "pytest", "source": files[test_file], "files": others})
    if result.passed == result.total:
        raise AssertionError(f"the planted bug breaks no test of {test_file}")
    return pytest_summary(result, test_file)


def build() -> list[Task]:
    """The tasks. The prompt's failure report comes from a real sandbox run, so building
    (and regenerating) needs the sandbox."""
    tasks = []
    for bug in BUGS:
        correct, test_file = REPOS[bug.repo]
        buggy = _plant(correct, bug)
        tasks.append(
            Task(
                id=f"repository/{bug.repo}/{bug.name}",
                domain="repository",
                prompt=_prompt(bug.repo, buggy, test_file, _failures(buggy, test_file)),
                tests={"format": "repository", "files": buggy, "editable": [f"{bug.repo}/"], "test_file": test_file},
                reference=f"```diff\n{make_patch(buggy, correct)}```",
                difficulty=bug.difficulty,
            )
        )
    return tasks


def verify(tasks: list[Task]) -> None:
    """The correct packages pass their suites; each task's reference patch scores 1.0."""
    from rlvr.sandbox import execute

    for name, (files, test_file) in REPOS.items():
        others = {p: x for p, x in files.items() if p != test_file}
        r = execute("", {"format": "pytest", "source": files[test_file], "files": others})
        if r.total == 0 or r.passed != r.total:
            raise AssertionError(f"{name}: the correct package fails its tests: {[t.message for t in r.tests]}")
    for t in tasks:
        result = check_reply(t, str(t.reference))
        if not (result.done and result.reward and result.reward.total == 1.0):
            raise AssertionError(f"{t.id}: the reference patch scores {result.reward}: {result.messages}")


def main() -> None:
    tasks = build()
    verify(tasks)
    write_tasks(tasks, DATA)
    print(f"repository: {len(tasks)} tasks")


if __name__ == "__main__":
    main()
