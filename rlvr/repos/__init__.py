"""Real repositories as environments: a repository's source fetched once (a directory, a
git revision or a pinned registry sdist), its test requirements found in its own files,
and a virtual environment built for them once and reused (`rlvr repos add|list|show`)."""

from rlvr.repos.source import RepoError
from rlvr.repos.store import Repo, add, list_repos, show

__all__ = ["Repo", "RepoError", "add", "list_repos", "show"]
