"""C, C++ and JavaScript programs: compiled and run in the same jail, stdio tests."""

import pytest

from rlvr.sandbox import Limits, execute
from rlvr.sandbox.spec import SpecError
from rlvr.types import RunStatus, TestStatus

DOUBLE = {"format": "stdio", "cases": [{"stdin": "3\n", "stdout": "6\n"}, {"stdin": "21\n", "stdout": "42\n"}]}
PROGRAMS = {
    "c": '#include <stdio.h>\nint main(void) { int n; scanf("%d", &n); printf("%d\\n", 2 * n); return 0; }\n',
    "cpp": "#include <iostream>\nint main() { int n; std::cin >> n; std::cout << 2 * n << std::endl; }\n",
    "javascript": "const n = parseInt(require('fs').readFileSync(0, 'utf8'));\nconsole.log(2 * n);\n",
}
LIMITS = Limits(timeout_s=20.0, memory_mb=512)


@pytest.mark.parametrize("language", list(PROGRAMS))
def test_correct_program_passes(language: str) -> None:
    r = execute(PROGRAMS[language], DOUBLE, LIMITS, language=language)
    assert r.status is RunStatus.OK and r.passed == 2, (r.error, r.stderr)


@pytest.mark.parametrize("language", ["c", "cpp"])
def test_compiler_errors_come_back_as_feedback(language: str) -> None:
    r = execute("int main( { return 0 }\n", DOUBLE, LIMITS, language=language)
    assert r.status is RunStatus.COMPILE_ERROR and "error" in r.error and r.passed == 0


def test_crash_signal_and_wrong_answer() -> None:
    crash = "int main(void) { int *p = 0; return *p; }\n"
    r = execute(crash, DOUBLE, LIMITS, language="c")
    assert r.passed == 0 and "SIGSEGV" in r.tests[0].message
    wrong = '#include <stdio.h>\nint main(void) { puts("7"); return 0; }\n'
    r = execute(wrong, DOUBLE, LIMITS, language="c")
    assert [t.status for t in r.tests] == [TestStatus.FAILED, TestStatus.FAILED]


def test_native_code_is_jailed_too() -> None:
    spin = "int main(void) { for (;;) {} }\n"
    r = execute(spin, {"format": "stdio", "cases": [{"stdin": "", "stdout": ""}]}, Limits(timeout_s=3), language="c")
    assert r.status is RunStatus.TIMEOUT
    net = (
        "const net = require('net');\nconst s = net.connect(80, '1.1.1.1');\n"
        "s.on('error', () => console.log('blocked'));\ns.on('connect', () => console.log('reached'));\n"
    )
    r = execute(net, {"format": "stdio", "cases": [{"stdin": "", "stdout": "blocked"}]}, LIMITS, language="javascript")
    assert r.passed == 1, (r.tests[0].message, r.stderr)


def test_bad_language_or_format_is_refused() -> None:
    with pytest.raises(SpecError, match="unknown language 'rust'"):
        execute("", DOUBLE, language="rust")
    with pytest.raises(SpecError, match="format 'stdio'"):
        execute("", ["assert True"], language="c")
