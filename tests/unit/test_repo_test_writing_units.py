"""Pure parts of rlvr/repos/test_writing.py: module names, the prompt's context, and the
package loaded from memory by a program (run here in-process on a hand-made package)."""

from __future__ import annotations

import sys
from pathlib import Path

from rlvr.repos.test_writing import _PRELUDE, function_context, module_name, package_files, program


def test_module_names_follow_the_pythonpath() -> None:
    assert module_name("src/semver/version.py", "src") == "semver.version"
    assert module_name("toolz/__init__.py", ".") == "toolz"
    assert module_name("toolz/sandbox/core.py", ".") == "toolz.sandbox.core"
    assert module_name("xmltodict.py", ".") == "xmltodict"


def test_the_prompt_shows_the_module_s_imports_and_the_whole_function() -> None:
    source = "import os\nfrom .b import c\n\nX = 1\n\n@dec\ndef f(a):\n    return a + X\n\n\ndef g():\n    pass\n"
    assert function_context(source, "f") == "import os\nfrom .b import c\n\n...\n\n@dec\ndef f(a):\n    return a + X"


def test_a_program_loads_the_package_from_memory_and_leaves_no_trace(tmp_path: Path) -> None:
    pkg = tmp_path / "pkgx"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .core import double\n")
    (pkg / "core.py").write_text("from .sub.helpers import two\n\ndef double(x):\n    return x * two()\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "helpers.py").write_text("def two():\n    return 2\n")
    files = package_files(tmp_path, "pkgx.core")
    assert sorted(files) == ["pkgx", "pkgx.core", "pkgx.sub", "pkgx.sub.helpers"] and files["pkgx"][1]
    before = list(sys.meta_path)
    try:
        for changed, want in ((None, 6), ("from .sub.helpers import two\n\ndef double(x):\n    return x + two()\n", 5)):
            for name in [m for m in sys.modules if m.split(".")[0] == "pkgx"]:
                del sys.modules[name]
            space: dict = {}
            code = _PRELUDE.replace("{files!r}", repr(files)) + program("pkgx.core", "double", changed)
            exec(compile(code, "<program>", "exec"), space)  # our own generated code, on a package of ours
            assert space["double"](3) == want
            assert not [k for k in space if "rlvr" in k.lower()] and sys.meta_path == before
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "pkgx"]:
            del sys.modules[name]


def test_a_long_class_is_shown_as_its_outline() -> None:
    source = (
        "import re\n\n\nclass Box:\n    '''A box.'''\n\n    size = 1\n\n    @property\n    def area(self):\n"
        "        '''The area.\n\n        More words.'''\n        return self.size ** 2\n\n"
        "    def grow(self, by):\n        self.size += by\n        return self\n"
    )
    whole = function_context(source, "Box")
    assert whole.endswith("        self.size += by\n        return self")
    outline = function_context(source, "Box", budget=50)
    assert outline == (
        'import re\n\n...\n\nclass Box:\n    """A box."""\n    size = 1\n    @property\n    def area(self):\n'
        '        """The area. ..."""\n        ...\n    def grow(self, by):\n        ...'
    )
