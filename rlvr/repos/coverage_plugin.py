"""A pytest plugin that records which tests run which lines (coverage.py, one dynamic
context per test node id), for rlvr.repos.coverage.

Not imported by rlvr: its text is written into a run's copy of the tree and loaded by the
sandboxed pytest with `-p _rlvr_coverage`. It writes RLVR_COVERAGE_OUT (JSON):
  {"tests": [node ids], "files": {path relative to the tree: {line: [test index, ...]}}}
where the id "" stands for what ran outside any test (collection: imports, parametrize
lists built by calling the code).
for every measured file under the tree, the test files included (the reader filters).
"""

# mypy: ignore-errors
import json
import os

import coverage  # the repository environment's (rlvr adds it to every environment)

_cov = None
_root = os.getcwd()


def pytest_configure(config):  # type: ignore[no-untyped-def]
    global _cov
    _cov = coverage.Coverage(data_file=None, source=[_root], branch=False, config_file=False)
    _cov.start()


def pytest_runtest_setup(item):  # type: ignore[no-untyped-def]
    if _cov is not None:
        _cov.switch_context(item.nodeid)


def pytest_runtest_logfinish(nodeid, location):  # type: ignore[no-untyped-def]
    if _cov is not None:
        _cov.switch_context("")


def pytest_sessionfinish(session, exitstatus):  # type: ignore[no-untyped-def]
    if _cov is None:
        return
    _cov.stop()
    data = _cov.get_data()
    tests: dict[str, int] = {}
    files: dict[str, dict[str, list[int]]] = {}
    for path in sorted(data.measured_files()):
        rel = os.path.relpath(path, _root)
        if rel.startswith(".."):
            continue
        by_line = data.contexts_by_lineno(path)
        lines = {}
        for line, contexts in sorted(by_line.items()):
            ids = sorted({tests.setdefault(c, len(tests)) for c in contexts})  # "": collection, imports
            if ids:
                lines[str(line)] = ids
        if lines:
            files[rel] = lines
    with open(os.environ["RLVR_COVERAGE_OUT"], "w") as f:
        json.dump({"tests": sorted(tests, key=tests.__getitem__), "files": files}, f)
