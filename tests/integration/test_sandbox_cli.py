"""The `rlvr sandbox` command contract that scripts depend on."""

import json
import subprocess
import sys
from pathlib import Path


def rlvr(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlvr.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_run_every_format_as_json(tmp_path: Path) -> None:
    (tmp_path / "sol.py").write_text(
        "def f(x):\n    return x * 2\n\nif __name__ == '__main__':\n    print(f(int(input())))\n"
    )
    (tmp_path / "test_x.py").write_text("from solution import f\n\ndef test_one():\n    assert f(1) == 2\n")
    specs = {
        "assert": {"format": "assert", "tests": ["assert f(1) == 2", "assert f(2) == 5"]},
        "call": {"format": "call", "entry": "f", "cases": [{"args": [1], "expected": 2}, {"args": [2], "expected": 4}]},
        "stdio": {"format": "stdio", "cases": [{"stdin": "3\n", "stdout": "6"}, {"stdin": "4", "stdout": "9"}]},
        "pytest": {"format": "pytest", "file": "test_x.py"},
    }
    expected = {"assert": (1, 2), "call": (2, 2), "stdio": (1, 2), "pytest": (1, 1)}
    for name, spec in specs.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(spec))
        r = rlvr("sandbox", "run", "sol.py", "--tests", f"{name}.json", "--json", "--timeout", "20", cwd=tmp_path)
        passed, total = expected[name]
        assert r.returncode == (0 if passed == total else 1), r.stderr  # 1: some test failed
        out = json.loads(r.stdout)
        assert (out["passed"], out["total"]) == expected[name], (name, out)
        assert out["status"] == "OK" and all("status" in t for t in out["tests"])


def test_run_c_and_errors(tmp_path: Path) -> None:
    (tmp_path / "a.c").write_text('#include <stdio.h>\nint main(void){int n;scanf("%d",&n);printf("%d\\n",n+1);}\n')
    (tmp_path / "t.json").write_text(json.dumps({"format": "stdio", "cases": [{"stdin": "1", "stdout": "2"}]}))
    r = rlvr("sandbox", "run", "a.c", "--tests", "t.json", "--language", "c", "--json", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["passed"] == 1, r.stderr
    (tmp_path / "bad.json").write_text('{"format": "nope"}')
    r = rlvr("sandbox", "run", "a.c", "--tests", "bad.json", cwd=tmp_path)
    assert r.returncode == 2 and "unknown test format" in r.stderr
    r = rlvr("sandbox", "run", "missing.py", "--tests", "t.json", cwd=tmp_path)
    assert r.returncode == 2 and "file not found" in r.stderr
    r = rlvr("sandbox", "run", "a.c", "--tests", "t.json", "--parallel-tests", "0", cwd=tmp_path)
    assert r.returncode == 2 and "--parallel-tests must be at least 1" in r.stderr


def test_run_tests_one_by_one_or_side_by_side(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("import time\n\ndef f(x):\n    time.sleep(0.4)\n    return x\n")
    (tmp_path / "t.json").write_text(
        json.dumps({"format": "assert", "tests": [f"assert f({i}) == {i}" for i in range(3)]})
    )
    walls = {}
    for n in ("1", "3"):
        r = rlvr("sandbox", "run", "s.py", "--tests", "t.json", "--parallel-tests", n, "--json", cwd=tmp_path)
        out = json.loads(r.stdout)
        assert out["passed"] == 3, out
        walls[n] = out["wall_time_s"]
    assert walls["1"] >= 1.2 and walls["3"] < 1.0, walls


def test_check_lists_protections(tmp_path: Path) -> None:
    r = rlvr("sandbox", "check", cwd=tmp_path)
    assert "seccomp filter" in r.stdout and "network namespace" in r.stdout
    assert r.returncode in (0, 1)
