"""The repository agent on a fixture project, in the sandbox: its tools see the episode's
tree (the broken file and the agent's edits over the pristine tree, which is never
written), refuse bad arguments with one line naming them, never name or run a held-out
test before submit; a scripted policy solves tasks through the tools; protected edits
are refused, a PASS_TO_PASS break pays 0, and an episode out of budget is cut (runner:
finish_reason 'budget', masked by the compact filter)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.envs import EnvSettings
from rlvr.repos import Repo, add
from rlvr.repos.agent import DOMAIN, RepoAgentEnv, episode_task, held_out_tests
from rlvr.repos.mine import RepoTask
from rlvr.repos.scripted import solve
from rlvr.repos.suite import Baseline, ensure_baseline
from rlvr.tasks.mutate import mutations
from rlvr.types import Task

PRICING = """\
from shop.tax import tax_for


def discount(amount, percent):
    if percent < 0 or percent > 100:
        raise ValueError("percent out of range")
    return amount * (100 - percent) / 100


def total(items, percent=0, region="EU"):
    subtotal = sum(price * qty for price, qty in items)
    net = discount(subtotal, percent)
    return round(net + tax_for(net, region), 2)
"""

TAX = """\
RATES = {"EU": 0.2, "US": 0.07}


def tax_for(amount, region):
    if region not in RATES:
        raise KeyError(f"unknown region {region}")
    return amount * RATES[region]
"""

TEST_PRICING = """\
import pytest

from shop import pricing


def test_discount_none():
    assert pricing.discount(50, 0) == 50


def test_discount_half():
    assert pricing.discount(50, 50) == 25


def test_discount_full():
    assert pricing.discount(50, 100) == 0


def test_discount_range():
    with pytest.raises(ValueError):
        pricing.discount(1, 101)


def test_total_plain():
    assert pricing.total([(10, 2)]) == 24.0


def test_total_discount_us():
    assert pricing.total([(100, 1)], 10, "US") == 96.3
"""

TEST_TAX = """\
import pytest

from shop.tax import tax_for


def test_rates():
    assert tax_for(100, "EU") == 20.0


def test_unknown_region():
    with pytest.raises(KeyError):
        tax_for(1, "XX")
"""

P = "tests/test_pricing.py::"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Repo, Baseline]:
    root = tmp_path_factory.mktemp("agent-repo")
    files = {
        "pyproject.toml": '[project]\nname = "shop"\nversion = "1.0"\n',
        "shop/__init__.py": "",
        "shop/pricing.py": PRICING,
        "shop/tax.py": TAX,
        "tests/test_pricing.py": TEST_PRICING,
        "tests/test_tax.py": TEST_TAX,
    }
    for name, text in files.items():
        (root / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "src" / name).write_text(text)
    cache = root / "cache"
    repo = add(str(root / "src"), cache)
    base, _ = ensure_baseline(repo, runs=1)
    assert len(base.passing) == 8, base
    return cache, repo, base


def _task(repo: Repo, file: str, source: str, original: str, replacement: str, f2p: list[str]) -> RepoTask:
    m = next(m for m in mutations(source) if m.original == original and m.replacement == replacement)
    return RepoTask(
        id=f"shop/{file}/{m.id}",
        repo=repo.slug,
        source=repo.source,
        digest=repo.digest,
        file=file,
        mutations=[m.to_dict()],
        fail_to_pass=f2p,
        covering=[P + n for n in ("test_discount_none", "test_discount_half", "test_discount_full")]
        + [P + "test_discount_range", P + "test_total_plain", P + "test_total_discount_us"]
        + ["tests/test_tax.py::test_rates", "tests/test_tax.py::test_unknown_region"],
        pass_to_pass=8 - len(f2p),
        operators=[m.operator],
        order=1,
        messages={t: "E   assert 75.0 == 25" for t in f2p},
    )


def discount_task(repo: Repo) -> RepoTask:
    """`100 - percent` made `100 + percent`: three discount tests fail, by assertion only."""
    f2p = [P + "test_discount_half", P + "test_discount_full", P + "test_total_discount_us"]
    return _task(repo, "shop/pricing.py", PRICING, "-", "+", f2p)


def tax_task(repo: Repo) -> RepoTask:
    """`not in` made `in`: every known region raises inside the library (a traceback frame)."""
    f2p = [P + "test_total_plain", P + "test_total_discount_us", "tests/test_tax.py::test_rates"]
    return _task(repo, "shop/tax.py", TAX, "not in", "in", f2p)


def _env(task: Task) -> RepoAgentEnv:
    env = RepoAgentEnv(EnvSettings())
    asyncio.run(env.reset(task))
    return env


def _say(env: RepoAgentEnv, **call: object) -> str:
    step = asyncio.run(env.step(json.dumps(call)))
    assert not step.done
    return step.messages[0]["content"]


def test_prompt_and_tools_show_the_broken_tree_and_never_the_held_out_test(shop: tuple[Path, Repo, Baseline]) -> None:
    cache, repo, _ = shop
    rt = discount_task(repo)
    held = held_out_tests(rt)
    assert len(held) == 1 and held[0] in rt.fail_to_pass
    task = episode_task(repo, rt, tier=0, cache=str(cache))
    RepoAgentEnv.check_task(task)
    assert task.domain == DOMAIN and held[0] not in task.prompt
    assert all(t in task.prompt for t in rt.fail_to_pass if t != held[0]) and "assert 75.0 == 25" in task.prompt
    env = _env(task)
    listing = _say(env, tool="list", path=".", depth=1)
    assert "shop/" in listing and "tests/" in listing and "pyproject.toml" in listing
    read = _say(env, tool="read", path="shop/pricing.py", start=5, end=7)
    assert "lines 5-7 of 13" in read and "7| " in read and "(100 + percent)" in read  # the broken file
    found = _say(env, tool="search", pattern=r"def (discount|tax_for)")
    assert "shop/pricing.py:4:" in found and "shop/tax.py:4:" in found
    assert "no line matches" in _say(env, tool="search", pattern="nothing_like_this")
    everything = _say(env, tool="run_tests")  # the covering tests, held-out deselected
    named = _say(env, tool="run_tests", tests=["tests/test_pricing.py"])  # a whole file: still deselected
    for text in (everything, named):
        assert "2 failed" in text and held[0].split("::")[1] not in text, text
    # arguments are checked; the pristine tree is never written
    for bad, why in (
        ({"tool": "read", "path": "../cache/repos.lock"}, "not a plain path"),
        ({"tool": "read", "path": "/etc/passwd"}, "not a plain path"),
        ({"tool": "read", "path": "shop/nope.py"}, "no file or directory shop/nope.py"),
        ({"tool": "read", "path": "shop/pricing.py", "start": 0}, "'start' must be an integer of at least 1"),
        ({"tool": "search", "pattern": "("}, "not a valid regular expression"),
        ({"tool": "run_tests", "tests": ["--collect-only"]}, "is not a test id"),
        ({"tool": "edit", "path": "shop/pricing.py", "old": "absent", "new": "x"}, "does not occur"),
        ({"tool": "edit", "path": "shop/pricing.py", "old": "percent", "new": "p"}, "occurs 7 times"),
        ({"tool": "edit", "path": "shop/pricing.py", "old": "(100 + percent)", "new": "(100 -"}, "would not parse"),
        ({"tool": "edit", "path": "tests/test_pricing.py", "old": "== 25", "new": "== 75.0"}, "may not be changed"),
        ({"tool": "fly"}, "Unknown tool 'fly'"),
    ):
        assert why in _say(env, **bad), bad
    assert "No tool call found" in asyncio.run(env.step("I would read the file first.")).messages[0]["content"]
    done = _say(env, tool="edit", path="shop/pricing.py", old="(100 + percent)", new="(100 - percent)")
    assert "replaced 1 line(s) at line 7" in done
    assert "(100 - percent)" in _say(env, tool="read", path="shop/pricing.py", start=7, end=7)
    assert (Path(repo.tree) / "shop/pricing.py").read_text() == PRICING  # the pristine tree, untouched
    fixed = _say(env, tool="run_tests")
    assert fixed.startswith("[run_tests]\n7 passed") and "failed" not in fixed
    final = asyncio.run(env.step('{"tool": "submit"}'))
    assert final.done and final.reward is not None and final.reward.total == 1.0
    d = final.reward.details
    assert d["f2p_passed"] == d["f2p_total"] == 3 and d["edited"] == ["shop/pricing.py"] and d["tool_errors"] == 12
    assert set(d["tool_s"]) == {"list", "read", "search", "run_tests", "edit"}


def test_submit_pays_nothing_when_a_passing_test_breaks(shop: tuple[Path, Repo, Baseline]) -> None:
    cache, repo, _ = shop
    env = _env(episode_task(repo, discount_task(repo), cache=str(cache)))
    _say(env, tool="edit", path="shop/pricing.py", old="(100 + percent)", new="(100 - percent)")
    _say(env, tool="edit", path="shop/tax.py", old='"EU": 0.2', new='"EU": 0.25')  # breaks two passing tests
    final = asyncio.run(env.step('{"tool": "submit"}'))
    assert final.done and final.reward is not None and final.reward.total == 0.0
    assert final.reward.details["p2p_broken"] == 2 and final.reward.details["f2p_passed"] == 3


def test_the_domain_contract_an_empty_reply_earns_nothing_and_a_task_without_tests_is_refused(
    shop: tuple[Path, Repo, Baseline],
) -> None:
    cache, repo, _ = shop
    task = episode_task(repo, discount_task(repo), cache=str(cache))
    env = RepoAgentEnv(EnvSettings())
    opening = asyncio.run(env.reset(task))
    assert opening[-1]["content"] == task.prompt and RepoAgentEnv.components == ()
    empty = asyncio.run(env.step('{"tool": "submit"}'))  # the unfixed tree, as it was given
    assert empty.done and empty.reward is not None and empty.reward.total == 0.0
    assert set(empty.reward.components) == {"completion"}
    with pytest.raises(ValueError, match=r"tests\.format"):
        RepoAgentEnv.check_task(Task(id="x", domain=DOMAIN, prompt="p", tests={}))


def test_a_run_whose_repository_is_not_built_is_answered_before_the_model_loads(
    shop: tuple[Path, Repo, Baseline], tmp_path: Path
) -> None:
    cache, repo, _ = shop
    task = episode_task(repo, discount_task(repo), cache=str(cache))
    RepoAgentEnv.preflight([task])  # built: nothing to say
    gone = Task(id="g", domain=DOMAIN, prompt="p", tests={**task.tests, "repo": "nope-1.0"})
    with pytest.raises(ValueError, match=r"not built here: nope-1\.0; build them with rlvr repos add"):
        RepoAgentEnv.preflight([task, gone])
    source = tmp_path / "gone.jsonl"
    source.write_text(json.dumps(gone.to_dict()) + "\n")
    example = str(Path(__file__).parents[2] / "examples" / "repos.yaml")
    cmd = [sys.executable, "-m", "rlvr.cli", "train", example, f"tasks.source={source}", "eval.before_training=false"]
    done = subprocess.run([*cmd, "eval.after_training=false"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "not built here: nope-1.0" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_an_episode_out_of_tool_calls_is_cut_not_scored(shop: tuple[Path, Repo, Baseline]) -> None:
    cache, repo, _ = shop
    env = _env(episode_task(repo, discount_task(repo), budget={"calls": 2}, cache=str(cache)))
    first = asyncio.run(env.step('{"tool": "list"}'))
    assert not first.done and "[1 tool call left]" in first.messages[0]["content"]
    second = asyncio.run(env.step('{"tool": "list"}'))
    assert second.done and second.info["cut"] == "calls" and second.reward is not None
    assert second.reward.total == 0.0 and second.reward.details["cut"] == "calls"
    with pytest.raises(ValueError, match=r"tests\.budget"):
        RepoAgentEnv.check_task(episode_task(repo, discount_task(repo), budget={"turns": 2}))


def test_an_episode_past_its_wall_time_is_cut_and_long_or_empty_answers_say_so(
    shop: tuple[Path, Repo, Baseline],
) -> None:
    """The wall budget counts from reset (generation included), so a step after it ends
    the episode unscored; an answer over the observation budget is cut with a note that
    says how long it was, and an empty one says it is empty rather than showing nothing."""
    cache, repo, _ = shop
    env = _env(
        episode_task(repo, discount_task(repo), budget={"wall_s": 60.0, "observation_chars": 200}, cache=str(cache))
    )
    first = asyncio.run(env.step('{"tool": "read", "path": "shop/pricing.py"}'))
    assert not first.done
    body = first.messages[0]["content"].split("\n[cut at 200 characters of ")
    assert len(body) == 2 and len(body[0]) == len("[read]\n") + 200, first.messages[0]["content"]
    assert "ask for less" in body[1] and "[29 tool calls left]" in body[1]
    assert env._observation("read", " \n") == "[read]\n(the tool printed nothing)\n[29 tool calls left]"
    env.started -= 61.0  # a minute has passed since reset
    late = asyncio.run(env.step('{"tool": "list"}'))
    assert late.done and late.info["cut"] == "wall" and late.reward is not None and late.reward.total == 0.0


@pytest.mark.parametrize("make", [discount_task, tax_task], ids=["assertion-only", "traceback"])
def test_the_scripted_policy_solves_tasks_through_the_tools(shop: tuple[Path, Repo, Baseline], make) -> None:  # type: ignore[no-untyped-def]
    cache, repo, _ = shop
    rt = make(repo)
    got = asyncio.run(solve(episode_task(repo, rt, tier=1, cache=str(cache))))
    assert got.reward == 1.0 and got.done, got
    assert got.located == ("search" if make is discount_task else "traceback")
    assert json.loads(got.transcript[-1]) == {"tool": "submit"} and got.calls == len(got.transcript)


def _episodes(task: Task, script: list[str], max_turns: int):  # type: ignore[no-untyped-def]
    from rlvr.rollout.engine import SamplingParams
    from rlvr.rollout.models import load_tokenizer
    from rlvr.rollout.runner import EpisodeSettings, run_episodes
    from tests.integration.test_multiturn import ScriptedEngine

    tok = load_tokenizer("tiny-random")
    settings = EpisodeSettings(EnvSettings(), max_turns=max_turns)
    params = SamplingParams(max_new_tokens=64)
    trajs = run_episodes([task], engine=ScriptedEngine(tok, script), tokenizer=tok, episodes=settings, params=params)
    return trajs[0]


def test_the_runner_drives_tool_episodes_and_marks_budget_cuts(shop: tuple[Path, Repo, Baseline]) -> None:
    from rlvr.learner.prepare import loss_masks

    cache, repo, _ = shop
    fix = json.dumps({"tool": "edit", "path": "shop/pricing.py", "old": "(100 + percent)", "new": "(100 - percent)"})
    solved = _episodes(episode_task(repo, discount_task(repo), cache=str(cache)), [fix, '{"tool": "submit"}'], 4)
    assert solved.reward is not None and solved.reward.total == 1.0 and solved.finish_reason == "eos"
    assert [t.role for t in solved.turns] == ["system", "user", "assistant", "user", "assistant"]
    assert "replaced 1 line(s)" in solved.turns[3].content and 0 in solved.loss_mask  # the tool's answer: no loss
    lost = _episodes(
        episode_task(repo, discount_task(repo), budget={"calls": 2}, cache=str(cache)), ['{"tool": "list"}'], 5
    )
    assert lost.finish_reason == "budget" and lost.timings["turns"] == 2.0 and lost.reward is not None
    out_of_turns = _episodes(episode_task(repo, discount_task(repo), cache=str(cache)), ['{"tool": "list"}'], 2)
    assert out_of_turns.finish_reason == "turns"
    masks = loss_masks([solved, lost, out_of_turns], overlong_filter=False, compact_filter=True)
    assert any(masks[0]) and not any(masks[1]) and not any(masks[2])


def test_rlvr_train_runs_tool_episodes_on_the_repository(shop: tuple[Path, Repo, Baseline], tmp_path: Path) -> None:
    """The example's shape on the fixture with the tiny model: the plugin registers the
    domain, episodes run through the tools, the repository's suite is the reward."""
    from rlvr.config import load_config
    from rlvr.train.loop import train

    cache, repo, _ = shop
    tasks = [
        episode_task(repo, make(repo), tier, cache=str(cache)) for make in (discount_task, tax_task) for tier in (0, 1)
    ]
    source = tmp_path / "shop.jsonl"
    source.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks))
    example = Path(__file__).parents[2] / "examples" / "repos.yaml"
    cfg = load_config(
        example,
        [
            "model.name_or_path=tiny-random",
            f"tasks.source={source}",
            "tasks.eval_fraction=0.25",
            "generation.max_new_tokens=8",
            "rollout.max_turns=2",
            "rollout.max_context_tokens=4096",
            "algo.group_size=2",
            "train.steps=1",
            "eval.before_training=false",
            "eval.num_tasks=1",
            f"output_dir={tmp_path}",
        ],
    )
    train(cfg, quiet=True)
    rows = [json.loads(line) for line in (tmp_path / "repos" / "trajectories.jsonl").read_text().splitlines()]
    assert rows and all(r["domain"] == DOMAIN for r in rows)
    assert all(r["finish_reason"] in ("turns", "budget", "length", "eos") for r in rows)
    answers = [r["turns"][3]["content"] for r in rows if len(r["turns"]) > 3]  # the environment's, after a reply
    assert answers and all(a.startswith("[") and "tool call" in a for a in answers), answers
    metrics = [json.loads(line) for line in (tmp_path / "repos" / "metrics.jsonl").read_text().splitlines()]
    step = [m for m in metrics if "rollout/completion_tokens" in m][-1]
    assert step["rollout/budget_cut_frac"] == sum(r["finish_reason"] in ("turns", "budget") for r in rows) / len(rows)


@pytest.mark.parametrize(
    ("make", "located"),
    [(discount_task, ["run_tests", "search"]), (tax_task, ["run_tests"])],
    ids=["assertion-only", "traceback"],
)
def test_the_reference_is_an_episode_of_tool_calls_the_environment_pays_in_full(  # type: ignore[no-untyped-def]
    shop: tuple[Path, Repo, Baseline], make, located
) -> None:
    """What the supervised stage trains on for a repository task (rlvr.sft.data): the
    broken file found from what the episode was shown (the failures of a test run, whose
    text the task's mined messages predict; a search for the function where they name no
    library frame), then read, edited, tested and submitted, one call a reply, checked in
    the sandbox; with one turn there is no reference to train on, and the count says why."""
    from rlvr.repos.agent import TOOL_SCHEMAS, resources
    from rlvr.repos.reference import unseen_paths
    from rlvr.repos.suite import run_suite
    from rlvr.sft.data import Loaded, task_examples

    cache, repo, _ = shop
    rt = make(repo)
    _, _, pool = resources(repo.slug, str(cache))
    mined = run_suite(repo, pool, tests=rt.covering, files=rt.unfixed(Path(repo.tree)))  # as mining records them
    rt.messages = {t: mined.verdicts[t].message for t in rt.fail_to_pass}
    task = episode_task(repo, rt, tier=1, cache=str(cache))
    out = Loaded()
    (ex,) = task_examples([task], EnvSettings(), check=True, out=out, max_turns=8)
    assert out.left_out == {} and ex.tools == TOOL_SCHEMAS
    calls = [json.loads(m["content"]) for m in ex.messages if m["role"] == "assistant"]
    assert [c["tool"] for c in calls] == [*located, "read", "edit", "run_tests", "submit"]
    assert calls[-3]["path"] == calls[-4]["path"] == rt.file
    assert unseen_paths(ex.messages) == []  # the file was named by a test run or a search before it was read
    assert "passed" in ex.messages[-2]["content"]  # run_tests' answer, before the submit
    one = Loaded()
    assert task_examples([task], EnvSettings(), check=True, out=one, max_turns=1) == []
    assert one.left_out == {"references played over turns, with rollout.max_turns 1 (repo_agent)": 1}
    short = Loaded()  # too few turns to submit: the check finds it unpaid and leaves it out
    assert task_examples([task], EnvSettings(), check=True, out=short, max_turns=len(calls) - 1) == []
    assert short.left_out == {"references their environment does not pay in full (repo_agent)": 1}


def test_a_reference_that_reads_a_file_no_answer_named_is_not_trained_on(
    shop: tuple[Path, Repo, Baseline], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paid in full but reading the broken file at once, as the first reference episodes
    did: a policy trained on it learns to guess paths, so the supervised stage leaves it
    out and counts why."""
    from rlvr.sft.data import Loaded, task_examples

    cache, repo, _ = shop
    rt = discount_task(repo)
    task = episode_task(repo, rt, tier=1, cache=str(cache))
    assert rt.file not in task.prompt
    pristine = (Path(repo.tree) / rt.file).read_text()
    broken = rt.unfixed(Path(repo.tree))[rt.file]
    old = next(a for a, b in zip(broken.splitlines(True), pristine.splitlines(True), strict=True) if a != b)
    fix = {"tool": "edit", "path": rt.file, "old": old, "new": old.replace("+", "-")}
    blind = [{"tool": "read", "path": rt.file}, fix, {"tool": "submit"}]
    monkeypatch.setattr(RepoAgentEnv, "reference_turns", staticmethod(lambda t: [json.dumps(c) for c in blind]))
    out = Loaded()
    assert task_examples([task], EnvSettings(), check=True, out=out, max_turns=8) == []
    assert out.left_out == {"references that name a file before any answer showed it (repo_agent)": 1}
