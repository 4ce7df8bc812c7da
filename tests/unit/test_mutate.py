"""rlvr.tasks.mutate, the one mutation engine: sites found on hand-worked sources, the
edit written back with the rest of the source untouched, and the filters that make a
mutant (it parses, it differs as a tree, one per distinct result)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from rlvr.tasks.mutate import (
    MutationError,
    apply,
    combine,
    mutants,
    mutations,
    operator_names,
    register_operator,
)
from rlvr.tasks.pyparse import parse

DATA = Path(__file__).resolve().parents[2] / "rlvr" / "tasks" / "data"


def sites(source: str, *operators: str) -> list[tuple[str, str, int, int]]:
    return [(m.original, m.replacement, m.line, m.col) for m in mutations(source, operators=operators)]


def test_a_comparison_boundary_is_found_at_its_token_and_written_back_alone() -> None:
    src = "def f(x):\n    return x < 3  # small\n"
    assert sites(src, "compare_boundary") == [("<", "<=", 2, 13)]
    (m,) = mutants(src, operators=["compare_boundary"])
    assert m.source == "def f(x):\n    return x <= 3  # small\n"
    assert m.mutations[0].function == "f" and m.family == "train"


def test_chained_comparisons_give_a_site_per_operator() -> None:
    src = "def inside(i, n):\n    return 0 <= i < n\n"
    assert sites(src, "compare_boundary") == [("<=", "<", 2, 13), ("<", "<=", 2, 18)]


def test_operators_between_parentheses_comments_and_continuations_keep_the_layout() -> None:
    src = "def f(a, b):\n    return ((a)  # first\n            +   \\\n   (b))\n"
    (m,) = mutants(src, operators=["arithmetic"])
    assert m.source == "def f(a, b):\n    return ((a)  # first\n            -   \\\n   (b))\n"
    assert (m.mutations[0].line, m.mutations[0].col) == (3, 12)


def test_two_word_operators_are_negated_whatever_the_spacing() -> None:
    src = "def f(x, y):\n    return x not   in y or x is not None\n"
    assert sites(src, "compare_negate") == [("not   in", "in", 2, 13), ("is not", "is", 2, 29)]


def test_boolean_flips_and_a_not_removed_without_losing_its_parentheses() -> None:
    src = "def f(a, b, c):\n    return c and not (a or b) or True\n"
    texts = sorted(m.source.splitlines()[1] for m in mutants(src, operators=["boolean"]))
    assert texts == sorted(
        [
            "    return c or not (a or b) or True",
            "    return c and not (a and b) or True",
            "    return c and not (a or b) and True",
            "    return c and (a or b) or True",
            "    return c and not (a or b) or False",
        ]
    )


def test_integer_constants_move_by_one_and_zero_becomes_minus_one_in_parentheses() -> None:
    src = "def f(xs):\n    return xs[0] + 2 ** 10\n"
    assert sorted(m.replacement for m in mutations(src, operators=["constant"])) == ["(-1)", "1", "1", "11", "3", "9"]
    assert all(parse(m.source) for m in mutants(src, operators=["constant"]))
    assert "    return xs[(-1)] + 2 ** 10" in [m.source.splitlines()[1] for m in mutants(src, operators=["constant"])]


def test_augmented_assignments_flip_their_operator() -> None:
    src = "def f(x):\n    x //= 2\n    x += 1\n    return x\n"
    assert sites(src, "arithmetic") == [("//=", "/=", 2, 6), ("+=", "-=", 3, 6)]


def test_statements_branches_arguments_and_returns() -> None:
    src = (
        "def f(xs, key):\n"
        "    out = sorted(xs, key)\n"
        "    if not out:\n"
        "        raise ValueError('empty')\n"
        "    return out\n"
    )
    assert sites(src, "remove_statement") == [
        ("out = sorted(xs, key)", "pass", 2, 4),
        ("raise ValueError('empty')", "pass", 4, 8),
    ]
    assert sites(src, "remove_branch") == [("not out", "False", 3, 7)]
    assert sites(src, "swap_arguments") == [("xs, key", "key, xs", 2, 17)]
    assert sites(src, "wrong_return") == [("out", "None", 5, 11)]


def test_only_function_bodies_are_mutated() -> None:
    src = (
        "LIMIT = 1 + 2\n"
        "@decorate(3)\n"
        "def f(a: int = 4, *, b: list[int] | None = None) -> int | None:\n"
        '    """Adds 5 and 6."""\n'
        "    return a + 7\n"
        "class C:\n"
        "    SIZE = 8 - 9\n"
        "    def m(self) -> int:\n"
        "        def inner():\n"
        "            return 10\n"
        "        return inner()\n"
        "if True:\n"
        "    def g():\n"
        "        return 11\n"
    )
    found = {(m.original, m.function) for m in mutations(src, family=None)}
    assert ("7", "f") in found and ("+", "f") in found
    assert ("10", "C.m.inner") in found and ("11", "g") in found
    assert not {o for o, _ in found} & {"1", "2", "3", "4", "5", "6", "8", "9", "|", "Adds 5 and 6."}


def test_f_strings_are_left_alone() -> None:
    src = 'def f(x):\n    return f"{x + 1}!"\n'
    assert sites(src, "arithmetic", "constant", "string_constant") == []


def test_columns_count_characters_and_edits_land_on_utf8_bytes() -> None:
    src = 'def f(x):\n    s = "é✓"; return s * (x - 1)\n'
    (m,) = mutants(src, operators=["arithmetic"])[1:]  # `*` first, then `-`
    assert (m.mutations[0].original, m.mutations[0].line, m.mutations[0].col) == ("-", 2, 28)  # 31 in bytes
    assert m.source == 'def f(x):\n    s = "é✓"; return s * (x + 1)\n'


def test_a_swap_that_leaves_the_same_tree_is_a_site_but_not_a_mutant() -> None:
    src = "def f(a):\n    return g(a.b, a .b)\n"
    assert sites(src, "swap_arguments") == [("a.b, a .b", "a .b, a.b", 2, 13)]
    assert mutants(src, operators=["swap_arguments"]) == []


def test_mutants_are_one_per_distinct_result() -> None:
    src = "def f(x):\n    return x - -1\n"
    results = [m.source for m in mutants(src, family=None)]
    assert len(results) == len(set(results))
    assert {m.source for m in mutants(src, family=None)} >= {
        "def f(x):\n    return x + -1\n",
        "def f(x):\n    return x - 1\n",
    }


def test_the_hidden_family_shares_no_operator_with_training() -> None:
    train, hidden = set(operator_names("train")), set(operator_names("hidden"))
    assert train and hidden and not train & hidden
    src = "def f(xs):\n    for x in xs:\n        if x & 1:\n            break\n    return max(xs[1:], key=-x)\n"
    assert {m.operator for m in mutations(src)} <= train
    assert {m.operator for m in mutations(src, family="hidden")} == hidden - {"string_constant"}
    assert {m.family for m in mutants(src, family="hidden")} == {"hidden"}


def test_apply_refuses_overlaps_and_mutations_of_another_source() -> None:
    src = "def f(x):\n    return x + 1\n"
    plus, *_ = mutations(src, operators=["arithmetic"])
    ret = mutations(src, operators=["wrong_return"])[0]
    with pytest.raises(MutationError, match="overlap"):
        apply(src, [plus, ret])
    with pytest.raises(MutationError, match="does not fit this source"):
        apply("def f(x):\n    return x * 1\n", [plus])


def test_a_mutation_round_trips_through_json_and_keeps_its_id() -> None:
    src = "def f(x):\n    return x > 1\n"
    m = mutations(src, operators=["compare_boundary"])[0]
    back = type(m).from_dict(json.loads(json.dumps(m.to_dict())))
    assert back == m and back.id == m.id and apply(src, [back]) == apply(src, [m])
    assert m.id == mutations(src, operators=["compare_boundary"])[0].id and m.id.startswith("compare_boundary@2:13:")
    with pytest.raises(MutationError, match="lacks the field 'replacement'"):
        type(m).from_dict({k: v for k, v in m.to_dict().items() if k != "replacement"})


def test_filters_by_function_and_by_covered_lines() -> None:
    src = "def f(x):\n    return x + 1\ndef g(x):\n    y = x * 2\n    return y\n"
    assert {m.mutations[0].function for m in mutants(src, functions=["g"])} == {"g"}
    assert {m.mutations[0].line for m in mutants(src, lines=[4])} == {4}
    assert mutants(src, lines=[]) == []


def test_higher_order_mutants_combine_disjoint_sites_deterministically() -> None:
    src = "def f(a, b):\n    if a < b:\n        return a + b\n    return a - b * 2\n"
    pool = mutants(src)
    twice = [combine(src, pool, 2, 5, seed=3), combine(src, pool, 2, 5, seed=3)]
    assert [m.id for m in twice[0]] == [m.id for m in twice[1]] and len(twice[0]) == 5
    singles = {m.source for m in pool}
    for m in twice[0]:
        a, b = m.mutations
        assert a.end <= b.start and m.source not in singles and m.source == apply(src, [a, b])
    assert [m.id for m in combine(src, pool, 2, 5, seed=4)] != [m.id for m in twice[0]]
    assert len(combine(src, pool, 3, 2, seed=0)[0].mutations) == 3
    with pytest.raises(ValueError, match="at least 2"):
        combine(src, pool, 1, 2, seed=0)


def test_bad_source_and_bad_registrations_say_what_is_wrong() -> None:
    with pytest.raises(MutationError, match=r"does not parse \(line 1"):
        mutations("def f(:\n  x\n")
    with pytest.raises(KeyError, match="unknown mutation operator 'flip'; valid names: arithmetic"):
        mutations("def f(x):\n    return x\n", operators=["flip"])
    with pytest.raises(ValueError, match="family must be one of train, hidden"):
        register_operator("x", "secret")
    with pytest.raises(ValueError, match="'constant' is already registered"):
        register_operator("constant", "train")(lambda node, src: iter(()))


def test_every_mutant_of_the_bundled_functions_parses_and_differs() -> None:
    refs = [json.loads(line)["reference"] for line in (DATA / "python_functions.jsonl").read_text().splitlines()]
    total, with_any = 0, 0
    for ref in refs:
        tree = ast.dump(parse(ref))
        ms = mutants(ref, family=None)
        with_any += bool(ms)
        total += len(ms)
        for m in ms:
            assert ast.dump(parse(m.source)) != tree
            compile(m.source, "<mutant>", "exec")
    assert with_any == len(refs) and total > 3 * len(refs)
