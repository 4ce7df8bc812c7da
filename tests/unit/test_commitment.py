"""rlvr.rewards.commitment against hand-worked replies: which declare several answers,
which final answers split into candidates, and when that is a hedge (a right candidate
beside a wrong one) rather than one answer written twice."""

from __future__ import annotations

import pytest

from rlvr.rewards.commitment import candidates, declared_answers, hedge, numbers


def _is(*right: str):  # type: ignore[no-untyped-def]
    return lambda c: c.strip() in right


def test_declared_answers_are_tags_and_boxes_in_order() -> None:
    reply = "First \\boxed{12}. Then <answer>\\boxed{15}</answer> and <answer>16</answer>."
    assert declared_answers(reply) == ["15", "16", "12"]
    assert declared_answers("no answer here") == []
    assert declared_answers("<answer> </answer> \\boxed{\\frac{1}{2}}") == ["\\frac{1}{2}"]


def test_numbers_count_fractions_and_thousands_as_one() -> None:
    assert numbers("\\frac{3}{4}") == ["3/4"]
    assert numbers("1,234 apples and -5.5") == ["1,234", "-5.5"]
    assert numbers("3 / 4") == ["3/4"]
    assert numbers("x = 5") == ["5"]


def test_candidates_split_only_at_separators_the_expected_answer_lacks() -> None:
    assert candidates("542 or 543", "543") == ["542", "543"]
    assert candidates("\\{542, 543\\}", "543") == ["542", "543"]
    assert candidates("Yes/No", "Yes") == ["Yes", "No"]
    assert candidates("apple, banana, cherry", "apple, banana, cherry") == ["apple, banana, cherry"]
    assert candidates("3/4", "3/4") == ["3/4"]
    assert candidates("543", "543") == ["543"]
    # one number expected, several given: each number is a candidate
    assert candidates("542 543", "543") == ["542 543", "542", "543"]
    assert candidates("1,234", "1234") == ["1,234"]


def test_a_right_candidate_beside_a_wrong_one_is_a_hedge() -> None:
    right = _is("543")
    assert hedge("\\boxed{542 \\text{ or } 543}", "542 \\text{ or } 543", "543", right)
    assert hedge("<answer>542</answer> <answer>543</answer>", "543", "543", right)
    assert hedge("\\boxed{542}, no wait, \\boxed{543}", "543", "543", right)
    reason = hedge("<answer>maybe 542 or 543</answer>", "maybe 542 or 543", "543", right)
    assert reason is not None and "2 candidates" in reason


def test_one_answer_written_twice_or_in_two_notations_is_not_a_hedge() -> None:
    right = _is("543", "543.0")
    assert hedge("<answer>543</answer>", "543", "543", right) is None
    assert hedge("So \\boxed{543}.\n<answer>543</answer>", "543", "543", right) is None
    assert hedge("\\boxed{543} and again \\boxed{543.0}", "543.0", "543", right) is None
    assert hedge("<answer>543 or 543.0</answer>", "543 or 543.0", "543", right) is None  # both right
    # neither number alone is right: 2*sqrt(3) for 3.4641 is one answer, not two
    assert hedge("\\boxed{2\\sqrt{3}}", "2\\sqrt{3}", "3.4641", _is("2\\sqrt{3}")) is None
    # a list answer keeps its commas
    words = "apple, banana, cherry"
    assert hedge(f"<answer>{words}</answer>", words, words, _is(words)) is None


@pytest.mark.parametrize(
    ("answer", "expected", "prompt", "refused"),
    [
        ("54\\%", "54", "A jacket costs 60 dollars and is sold at 10% off. What is the sale price in dollars?", True),
        ("54 percent", "54", "It costs 60 dollars, 10% off. What is the price in dollars?", True),
        ("54", "54", "It costs 60 dollars, 10% off. What is the price in dollars?", False),
        ("25\\%", "25", "Ann scored 5 of 20. What percent did she score?", False),  # the question asks it
        ("25\\%", "25\\%", "Ann scored 5 of 20. What share did she score?", False),  # the answer has it
        ("25\\%", "25", "Give Ann's score as a percentage", False),  # no question mark: the whole prompt
        ("54%", "0.54", "It costs 60 dollars, 10% off. What fraction of the price is paid?", False),  # same value
        ("25\\%", "25", "What is the rate? Give your answer in percent.", False),  # asked after the question
        ("12\\%", "12", "What is 15% of 80?", True),  # the prompt's % is an operand
        ("55\\%", "54", "It costs 60 dollars, 10% off. What is the price in dollars?", False),  # wrong anyway
    ],
)
def test_a_percentage_where_a_number_is_asked_is_refused(
    answer: str, expected: str, prompt: str, refused: bool
) -> None:
    from rlvr.rewards.commitment import unasked_percent

    assert (unasked_percent(answer, expected, prompt) is not None) is refused


@pytest.mark.parametrize(
    ("answer", "expected", "refused"),
    [
        ("240 \\text{ thousand}", "240", True),  # 240,000 shells, compared by math-verify as 240
        ("\\text{240 thousand}", "240", True),
        ("13 \\text{ cents}", "13", True),  # a hundredth of the 13 dollars asked
        ("240k", "240", True),
        ("13 \\text{ dollars}", "13", False),
        ("240 \\text{ thousand}", "240000", False),  # the number differs: not paid anyway
        ("5 m", "5", False),  # a unit, not a scale
        ("7 \\text{ km}", "7", False),
        ("3 dozen", "3 dozen", False),  # the answer has it
        ("240 Thousand", "240", True),
        ("240\\text{k}", "240", True),
        ("300K", "300", False),  # kelvin
        ("54 per cent", "54", False),  # a percentage: unasked_percent's to judge
    ],
)
def test_a_word_that_scales_the_number_is_refused_where_the_answer_lacks_it(
    answer: str, expected: str, refused: bool
) -> None:
    from rlvr.rewards.commitment import unasked_scale

    assert (unasked_scale(answer, expected, "How much did she pay in dollars?") is not None) is refused
    assert unasked_scale("13 cents", "13", "How many cents are left?") is None  # the question's own unit


def test_a_character_that_matches_only_after_folding_is_a_lookalike() -> None:
    from rlvr.rewards.commitment import lookalike

    assert "U+212A" in str(lookalike("gner\u212a", "gnerk"))  # the Kelvin sign lower-cases to k
    assert "'S'" in str(lookalike("\u017fun", "Sun")) or "'s'" in str(lookalike("\u017fun", "Sun"))  # a long s
    assert "U+FF41" in str(lookalike("\uff41b", "ab"))  # full width
    assert lookalike("gnerk", "gnerk") is None and lookalike("gnerK", "gnerk") is None  # plain case: the scorer's call
    assert lookalike("café", "cafe") is None  # an accent folds to no ASCII letter
    assert lookalike("\u212a", "\u212a") is None and lookalike("k", "straße") is None


def test_a_decimal_that_only_rounds_to_the_expected_fraction_is_refused_unless_rounding_is_asked() -> None:
    from rlvr.rewards.commitment import unasked_rounding

    assert "rounded decimal" in str(unasked_rounding("9.263158", "176/19", "How many hours?"))
    assert "rounded decimal" in str(unasked_rounding("9.263158 hours", " 176/19", "How many hours?"))
    assert unasked_rounding("9.263158", "176/19", "Round to six decimal places.") is None
    assert unasked_rounding("7.5", "15/2") is None and unasked_rounding("7.50", "15/2") is None  # exactly equal
    assert unasked_rounding("176/19", "176/19") is None and unasked_rounding("543", "543") is None
    assert unasked_rounding("9.2 or 9.3", "176/19") is None  # two numbers: the hedge rule's case
    assert unasked_rounding("0.5", "\\frac{1}{2}") is None  # not written plainly: math-verify's call


@pytest.mark.parametrize(
    ("answer", "expected", "refused"),
    [
        ("\\geq 543", "543", True),  # blind set 7: a lower bound, read as 543 by math-verify
        ("\\frac{36}{7} \\text{ or more}", "36/7", True),
        ("at least 5", "5", True),
        ("more than 7", "7", True),
        ("\\ge 3", "3", True),
        ("< 12", "12", True),
        ("≥ 12", "12", True),
        ("543", "543", False),
        ("x < 3", "x < 3", False),  # the answer itself is a relation
        ("\\text{leftover } 5", "5", False),  # a word holding "over" states no bound
        ("\\gets 3", "3", False),  # a macro that only starts like \\ge
        ("\\geqq 543", "543", True),
        ("\\succ 543", "543", True),
        ("over 543", "543", True),
        ("543+", "543", True),
        ("543^{+}", "543", True),
        ("\\mathrm{at\\ least}\\ 543", "543", True),
        ("x \\geq 5", "5", True),
        ("A -> C -> A -> B", "A → C → A → B", False),  # an arrow between moves (quantum_lock)
        ("F+1 -> K+1", "None", False),
        ("Altogether the cards add up to 543.", "543", False),
        ("8 \\text{ (rounded up to whole boxes)}", "8", False),
        ("543 <- total cards", "543", False),
        ("543+2", "545", False),
    ],
)
def test_a_bound_is_not_a_value(answer: str, expected: str, refused: bool) -> None:
    from rlvr.rewards.commitment import bound

    assert (bound(answer, expected) is not None) is refused
