import jsonschema
import pytest

from rlvr.rewards.base import RewardComponent
from rlvr.rewards.combine import Term, combine, combine_group, group_normalize
from rlvr.rewards.format import FormatRules, extract_answer, format_reward
from rlvr.rewards.length import overlong_penalty
from rlvr.rewards.security import scan, security_reward


def test_overlong_penalty_hand_worked() -> None:
    # max_len 100, cache 20: free up to 80; 90 tokens -> (80 - 90) / 20 = -0.5
    assert overlong_penalty(80, 100, 20).value == 0.0
    assert overlong_penalty(90, 100, 20).value == pytest.approx(-0.5)
    assert overlong_penalty(100, 100, 20).value == pytest.approx(-1.0)
    assert overlong_penalty(101, 100, 20).value == -1.0
    with pytest.raises(ValueError, match="cache"):
        overlong_penalty(1, 10, 20)


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("import os\nos.system('rm -rf /')", "shell"),
        ("import subprocess\nsubprocess.run('ls', shell=True)", "shell"),
        ("import subprocess as sp\nsp.Popen(['ls'])", "process"),
        ("x = input()\neval(x)", "eval"),
        ("import pickle\npickle.loads(b)", "deserialise"),
        ("import yaml\nyaml.load(s)", "deserialise"),
        ("import socket\nsocket.socket()", "network"),
        ("import ctypes\nctypes.CDLL(None)", "ctypes"),
        ("open('/etc/passwd', 'w').write('x')", "write-outside"),
        ("open('../x', 'a')", "write-outside"),
        ("cur.execute(f'SELECT * FROM t WHERE name = {name}')", "sql-injection"),
        ("cur.execute('SELECT * FROM t WHERE id = %s' % uid)", "sql-injection"),
        ("cur.execute('DELETE FROM t WHERE id = {}'.format(i))", "sql-injection"),
        ("import rlvr.sandbox.harness", "harness"),
    ],
)
def test_security_findings(code: str, kind: str) -> None:
    assert kind in {f["kind"] for f in scan(code)}
    assert security_reward(code).value < 0


@pytest.mark.parametrize(
    "code",
    [
        "def f(x):\n    return x + 1\n",
        "import sys\nprint(sys.version)\n",  # sys alone is harmless
        "import yaml\nyaml.load(s, Loader=yaml.SafeLoader)\n",
        "cur.execute('SELECT * FROM t WHERE id = ?', (uid,))\n",  # parameterised SQL
        "open('out.txt', 'w').write('x')\n",  # inside the work dir
        "eval('1 + 2')\n",  # a constant string
        "def f(:\n",  # unparsable: judged by other components
    ],
)
def test_security_clean_code_is_not_flagged(code: str) -> None:
    assert security_reward(code).value == 0.0


def test_security_penalty_is_bounded_and_counts_runtime_blocks() -> None:
    code = "import os\n" + "os.system('x')\n" * 5
    assert security_reward(code).value == -1.0
    r = security_reward("x = 1\n", runtime_output="PermissionError: [Errno 1] Operation not permitted")
    assert r.value == pytest.approx(-0.6) and r.details["blocked_at_runtime"] == 2


def test_format_rules() -> None:
    rules = FormatRules(code_block=True, required_tags=("think",), regex=r"def \w+\(")
    good = "<think>easy</think>\n```python\ndef f(x):\n    return x\n```"
    assert format_reward(good, rules).value == 1.0
    half = "```python\ndef f(x): pass\n```"  # no think tag, regex ok, block ok -> 2/3
    assert format_reward(half, rules).value == pytest.approx(2 / 3)
    assert format_reward("nothing", FormatRules()).value == 1.0  # no rules declared


def test_format_json_schema() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    rules = FormatRules(json_schema=schema)
    assert format_reward('<answer>{"answer": 3}</answer>', rules).value == 1.0
    assert format_reward('```json\n{"answer": 3}\n```', rules).value == 1.0
    bad = format_reward('{"answer": "three"}', rules)
    assert bad.value == 0.0 and "schema" in bad.details["notes"]["json_schema"]
    assert format_reward("not json", rules).details["notes"]["json_schema"].startswith("not JSON")
    assert extract_answer("x <answer> 42 </answer>") == "42"
    with pytest.raises(jsonschema.SchemaError):  # an invalid schema is refused when the rules are made
        FormatRules(json_schema={"type": "nonsense"})


def C(v: float) -> RewardComponent:
    return RewardComponent(v)


@pytest.mark.parametrize(
    ("comps", "passed", "expected"),
    [
        # completion 1.0*1 + format 0.5*0.2 + security -0.5*1 = 0.6
        ({"completion": 1.0, "format": 0.5, "security": -0.5}, True, 0.6),
        # format is gated on all tests passing: 0.5*1 + (-0.5) = 0.0
        ({"completion": 0.5, "format": 1.0, "security": -0.5}, False, 0.0),
        # clipped to [-1, 1]: 1 + 0.2 + 0 = 1.2 -> 1.0
        ({"completion": 1.0, "format": 1.0, "security": 0.0}, True, 1.0),
        # -0.5 (timeout) - 1.0 = -1.5 -> clipped to -1.0
        ({"completion": -0.5, "format": 0.0, "security": -1.0}, False, -1.0),
    ],
)
def test_combine_table(comps: dict[str, float], passed: bool, expected: float) -> None:
    terms = [Term("completion"), Term("format", 0.2, gate="all_tests_pass"), Term("security")]
    b = combine({k: C(v) for k, v in comps.items()}, terms, all_tests_pass=passed, clip=(-1.0, 1.0))
    assert b.total == pytest.approx(expected)
    assert b.components == comps  # every component is recorded, gated or not
    assert ("format" in b.details["gated_out"]) is (not passed)


def test_combine_errors() -> None:
    with pytest.raises(KeyError, match="no component named"):
        combine({"completion": C(1)}, [Term("format")], all_tests_pass=True)
    with pytest.raises(ValueError, match="unknown gate"):
        Term("x", gate="sometimes")


def test_group_normalisation_gdpo() -> None:
    # values [1, 0, 0, 1]: mean 0.5, sample std sqrt(1/3) -> +-0.866
    assert [round(v, 3) for v in group_normalize([1, 0, 0, 1])] == [0.866, -0.866, -0.866, 0.866]
    assert group_normalize([0.3, 0.3]) == [0.0, 0.0]
    # A large-scale component no longer dominates: efficiency in [0, 100], completion in [0, 1]
    group = [{"completion": C(1.0), "efficiency": C(10.0)}, {"completion": C(0.0), "efficiency": C(90.0)}]
    terms = [Term("completion"), Term("efficiency")]
    plain = combine_group(group, terms, all_tests_pass=[True, False])
    assert plain[1].total > plain[0].total  # raw sum: efficiency wins
    normed = combine_group(group, terms, all_tests_pass=[True, False], normalize="group")
    assert normed[0].total == pytest.approx(normed[1].total, abs=1e-5)  # now they balance
    assert normed[0].components == {"completion": 1.0, "efficiency": 10.0}


@pytest.mark.parametrize(
    ("answer", "reference", "value"),
    [
        ("The answer is $\\frac{1}{2}$.", "0.5", 1.0),
        ("So x = \\boxed{2}", "2", 1.0),
        ("$\\sqrt{4}$", "2", 1.0),
        ("\\boxed{3}", "2", 0.0),
        ("I do not know", "2", 0.0),
    ],
)
def test_math_equivalence(answer: str, reference: str, value: float) -> None:
    from rlvr.rewards.math import math_reward

    assert math_reward(answer, reference).value == value


def test_math_reward_in_a_worker_thread() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from rlvr.rewards.math import math_reward

    with ThreadPoolExecutor(2) as ex:
        assert ex.submit(math_reward, "\\boxed{\\frac{6}{4}}", "1.5").result().value == 1.0
