"""numba's disk cache of the compiled kernels, kept fresh when the sources a kernel compiles in change.

numba checks a cached function against its own file only (its content from
numba 0.68 on, its time and size before), yet a kernel compiles in the kernels
of the modules it calls and freezes the constants it imports (tolerances, the
program's column numbers).  :func:`drop_stale_cache` records a digest of those
sources beside the module's cache and deletes the cache where the digest
differs -- by content, not time, so reinstalling the same files (``pip
install .`` again: pip leaves ``__pycache__``'s numba files in place) keeps
what was compiled.
"""
from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path

from numba.core import config
from numba.core.caching import _CacheLocator
from numba.misc.appdirs import AppDirs

PACKAGES = ("factorgraph", "elimination", "mechanics")
"""The packages whose modules a kernel's digest follows (not numpy's or numba's: numba keys on its version)."""
RECORD = "{stem}.sources"
"""The digest's file name in a cache directory (numba's own files there are ``{stem}.*.nbi`` / ``.nbc``)."""


def drop_stale_cache(module: str, *compiled_in: str) -> None:
    """Delete ``module``'s numba cache where its sources changed since the cache was written.

    Its sources: ``module``, the kernel modules ``compiled_in`` whose functions it compiles into its
    own, and every module of the package these import names from (numba freezes imported constants).
    The folder is the one numba will cache ``module`` in: the first it can write of ``NUMBA_CACHE_DIR``,
    the module's ``__pycache__`` and the user-wide cache.

    Called once at the end of each kernel module, e.g. ``drop_stale_cache(__file__, jacobi.__file__)``.
    """
    here = Path(module)
    digest = sources_digest(here, *map(Path, compiled_in))
    for folder in _cache_folders(here):
        record = folder / RECORD.format(stem=here.stem)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not (record.is_file() and record.read_text() == digest):
                for cached in folder.glob(f"{here.stem}.*.nb[ic]"):
                    cached.unlink(missing_ok=True)
                record.write_text(digest)
            return  # numba caches in the first folder it can write, as here
        except OSError:  # a read-only folder: numba tries the next one too
            continue


def sources_digest(*files: Path) -> str:
    """SHA-256 over the contents of ``files`` and of the package modules they import from, in path order.

    Examples
    --------
    >>> from pathlib import Path
    >>> import elimination.jacobi as jacobi
    >>> len(sources_digest(Path(jacobi.__file__)))
    64
    """
    every = set()
    for path in files:
        every |= {path.resolve(), *_imported(path.resolve())}
    digest = hashlib.sha256()
    for path in sorted(every):
        digest.update(str(path.name).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=None)
def _imported(path: Path) -> tuple:
    """The files of ``path``'s own packages that it imports from (``from .x import``, ``from elimination.x
    import``, ``import elimination.x``), one level deep."""
    root = path.parent.parent
    found = []
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.ImportFrom):
            base = path.parent if node.level else root
            for _ in range(max(node.level - 1, 0)):
                base = base.parent
            names = [node.module] if node.module else [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            base, names = root, [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if base == root and name.split(".")[0] not in PACKAGES:
                continue
            target = base.joinpath(*name.split("."))
            found += [f for f in (target.with_suffix(".py"), target / "__init__.py") if f.is_file()]
    return tuple(found)


def _cache_folders(module: Path) -> list:
    """Where numba may cache ``module``'s functions (its locators, in their order)."""
    sub = _CacheLocator.get_suitable_cache_subpath(str(module))
    folders = [Path(config.CACHE_DIR) / sub] if config.CACHE_DIR else []
    return folders + [module.parent / "__pycache__", Path(AppDirs(appname="numba", appauthor=False).user_cache_dir) / sub]
