"""The kernels' disk cache is dropped exactly when a source compiled in changes (content, not time)."""
import os

import pytest
from numba.core import config

from elimination.kernel_cache import drop_stale_cache


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A kernel module ``kern`` that imports a constant from ``consts`` and compiles ``helper`` in;
    ``unrelated`` is neither.  Returns the package folder.  (numba's cache beside the sources, as without
    ``NUMBA_CACHE_DIR``: the test that wants one sets it.)"""
    monkeypatch.setattr(config, "CACHE_DIR", "")
    pkg = tmp_path / "elimination"
    pkg.mkdir()
    (pkg / "consts.py").write_text("TOL = 1e-12\n")
    (pkg / "helper.py").write_text("def helper(x):\n    return x\n")
    (pkg / "unrelated.py").write_text("A = 1\n")
    (pkg / "kern.py").write_text("from .consts import TOL\nfrom . import helper\n")
    return pkg


def _cache(pkg, folder=None):
    """numba's files for two functions of ``kern`` (fake contents: only their names matter here)."""
    folder = folder or pkg / "__pycache__"
    folder.mkdir(exist_ok=True)
    names = ["kern.f-1.py311.nbi", "kern.f-1.py311.1.nbc", "kern.g-5.py311.nbi"]
    for name in names:
        (folder / name).write_bytes(b"compiled")
    return [folder / name for name in names]


def _drop(pkg):
    drop_stale_cache(str(pkg / "kern.py"), str(pkg / "helper.py"))


def test_a_cache_without_a_record_is_dropped_once(package):
    files = _cache(package)
    _drop(package)
    assert not any(f.exists() for f in files)
    files = _cache(package)
    _drop(package)
    assert all(f.exists() for f in files)


def test_same_contents_keep_the_cache_new_times_or_not(package):
    _drop(package)
    files = _cache(package)
    for name in ("kern.py", "consts.py", "helper.py"):  # a reinstall rewrites them: new times, same bytes
        path = package / name
        path.write_bytes(path.read_bytes())
        os.utime(path, (1e9 + 7, 2e9 + 7))
    _drop(package)
    assert all(f.exists() for f in files)


@pytest.mark.parametrize("changed", ["kern.py", "consts.py", "helper.py"])
def test_a_changed_source_drops_the_cache(package, changed):
    _drop(package)
    files = _cache(package)
    (package / changed).write_text((package / changed).read_text() + "# edited\n")
    _drop(package)
    assert not any(f.exists() for f in files)


def test_other_files_do_not(package):
    _drop(package)
    files = _cache(package)
    other = _cache(package, package / "__pycache__")[0].with_name("other.f-1.py311.nbi")
    other.write_bytes(b"compiled")
    (package / "unrelated.py").write_text("A = 2\n")
    _drop(package)
    assert all(f.exists() for f in files) and other.exists()


def test_numba_cache_dir_is_checked_too(package, tmp_path, monkeypatch):
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "numba_cache"))
    _drop(package)
    (folder,) = (tmp_path / "numba_cache").iterdir()  # numba's subfolder for the package (its own naming)
    assert not (package / "__pycache__").exists()  # (numba caches there only where NUMBA_CACHE_DIR is unset)
    files = _cache(package, folder)
    _drop(package)
    assert all(f.exists() for f in files)
    (package / "consts.py").write_text("TOL = 1e-10\n")
    _drop(package)
    assert not any(f.exists() for f in files)
