"""Installing the package with no network: the in-tree build backend
(hiercoll_build.py) and pip install --no-index into fresh virtual
environments without setuptools or wheel. No torch, no GPU needed.

Needs a library built beforehand (HIERCOLL_LIB, else the checkout's, as for
test_ctypes_sim); the install from the checkout also needs Go. Skips, with
the reason, where they or a venv (Debian: apt-get install python3-venv) are
missing. Runs under pytest or `python3 -m unittest` (from python/tests/).
"""

import base64
import csv
import hashlib
import io
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile
from unittest import mock

PYTHON_DIR = pathlib.Path(__file__).resolve().parents[1]
REPO = PYTHON_DIR.parent
sys.path.insert(0, str(PYTHON_DIR))

import hiercoll  # noqa: E402
import hiercoll_build  # noqa: E402

TAG = f"py3-none-linux_{platform.machine()}"
WHEEL = f"hiercoll-0.1.0-{TAG}.whl"

# Run in a venv's python from a directory outside the checkout: a 1 x 2
# simulated world, one thread per rank, an int32 reduce-scatter checked
# against the sum; prints where hiercoll and its library were found.
SMOKE = r"""
import array, json, threading
import hiercoll

m, n = 4, 3
ranks = hiercoll.sim_world(1, 2)
inputs = [array.array("i", [(r + 1) * 100 + i for i in range(m * n)]) for r in range(2)]
got, errors = {}, []

def rank_main(w):
    try:
        with hiercoll.ReduceScatter2D(m, n, "int32", world=w) as rs:
            src, dst = w.alloc(m * n * 4), w.alloc(m // 2 * n * 4)
            w.copy_to_device(src, inputs[w.rank])
            rs.reduce_scatter_ptr(src, m, dst)
            w.stream_synchronize(0, timeout=20)
            got[w.rank] = list(array.array("i", bytes(w.copy_to_host(dst, m // 2 * n * 4))))
    except BaseException as e:
        errors.append(repr(e))
    finally:
        w.close()

threads = [threading.Thread(target=rank_main, args=(w,)) for w in ranks]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
want = [inputs[0][i] + inputs[1][i] for i in range(m * n)]
ok = not errors and [got.get(0), got.get(1)] == [want[: m * n // 2], want[m * n // 2 :]]
print(json.dumps({"package": hiercoll.__file__, "library": str(hiercoll.library_path()),
                  "ok": ok, "errors": errors}))
"""


def _prebuilt_library():
    """A library built beforehand (HIERCOLL_LIB, else the checkout's), or skip."""
    try:
        return hiercoll.library_path()
    except hiercoll.NotSupportedError as e:
        raise unittest.SkipTest(f"no prebuilt library to package: {e}") from None


def _clean_env(**extra):
    """The environment for pip and the venvs: no HIERCOLL_LIB or PYTHONPATH
    from outside, and no pip configuration (indexes, find-links)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") and k not in ("HIERCOLL_LIB", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.update(extra)
    return env


def _path_without_go():
    """PATH less every directory with a go command in it."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not os.path.exists(os.path.join(d, "go"))]
    return os.pathsep.join(dirs)


def _sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


class BuildBackendTest(unittest.TestCase):
    """hiercoll_build's hooks called in this process (no pip, no venv)."""

    @classmethod
    def setUpClass(cls):
        cls.lib = _prebuilt_library()

    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="hiercoll-test-"))
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_wheel_of_hiercoll_lib(self):
        with mock.patch.dict(os.environ, {"HIERCOLL_LIB": str(self.lib)}), \
                mock.patch.object(hiercoll_build, "find_go", return_value=None):
            name = hiercoll_build.build_wheel(str(self.tmp))
        self.assertEqual(name, WHEEL)
        with zipfile.ZipFile(self.tmp / name) as zf:
            names = zf.namelist()
            for want in ["hiercoll/__init__.py", "hiercoll/_lib.py", "hiercoll/py.typed",
                         "hiercoll/libhiercoll.so", "hiercoll/_wheel.py", "hiercoll/hiercoll.h"]:
                self.assertIn(want, names)
            self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")])
            self.assertEqual(names[-1], "hiercoll-0.1.0.dist-info/RECORD")
            self.assertEqual(zf.read("hiercoll/libhiercoll.so"), self.lib.read_bytes())
            self.assertEqual(zf.getinfo("hiercoll/libhiercoll.so").external_attr >> 16 & 0o777, 0o755)
            wheel = zf.read("hiercoll-0.1.0.dist-info/WHEEL").decode()
            self.assertIn(f"Tag: {TAG}\n", wheel)
            self.assertIn("Root-Is-Purelib: false\n", wheel)
            meta = zf.read("hiercoll-0.1.0.dist-info/METADATA").decode()
            for line in ["Name: hiercoll", "Version: 0.1.0", "Requires-Python: >=3.9",
                         'Requires-Dist: torch>=2.1; extra == "torch"', "Provides-Extra: torch"]:
                self.assertIn(line + "\n", meta)
            rows = list(csv.reader(io.StringIO(zf.read("hiercoll-0.1.0.dist-info/RECORD").decode())))
            self.assertEqual(sorted(r[0] for r in rows), sorted(names))
            for path, digest, size in rows:
                if path.endswith("/RECORD"):
                    self.assertEqual((digest, size), ("", ""))
                    continue
                data = zf.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, size), (f"sha256={want}", str(len(data))), path)

    def test_prepared_metadata_is_the_wheels(self):
        dist_info = hiercoll_build.prepare_metadata_for_build_wheel(str(self.tmp))
        self.assertEqual(dist_info, "hiercoll-0.1.0.dist-info")
        with mock.patch.dict(os.environ, {"HIERCOLL_LIB": str(self.lib)}):
            name = hiercoll_build.build_wheel(str(self.tmp), metadata_directory=str(self.tmp / dist_info))
        with zipfile.ZipFile(self.tmp / name) as zf:
            self.assertEqual(zf.read(f"{dist_info}/METADATA"), (self.tmp / dist_info / "METADATA").read_bytes())

    def test_no_go_no_hiercoll_lib(self):
        env = {k: v for k, v in os.environ.items() if k != "HIERCOLL_LIB"}
        with mock.patch.dict(os.environ, env, clear=True), \
                mock.patch.object(hiercoll_build, "find_go", return_value=None), \
                self.assertRaisesRegex(hiercoll_build.BuildError,
                                       "HIERCOLL_LIB is not set .*no go command .*set HIERCOLL_LIB"):
            hiercoll_build.build_wheel(str(self.tmp))
        self.assertEqual(list(self.tmp.iterdir()), [])

    def test_bad_hiercoll_lib(self):
        text = self.tmp / "libhiercoll.so"
        text.write_text("not a library")
        cases = [(str(self.tmp / "missing.so"), "names no file"), (str(text), "not an ELF file")]
        import _ctypes  # a shared object without hc_abi_version, where it is not built in
        if getattr(_ctypes, "__file__", None):
            cases.append((_ctypes.__file__, "does not load here as ABI version"))
        for value, msg in cases:
            with mock.patch.dict(os.environ, {"HIERCOLL_LIB": value}), \
                    self.assertRaisesRegex(hiercoll_build.BuildError, msg):
                hiercoll_build.build_wheel(str(self.tmp / "out"))

    def test_copied_tree_needs_hiercoll_lib(self):
        """A copy of python/ (as older pip or an sdist builds) has no Go module around it."""
        copy = self.tmp / "python"
        shutil.copytree(PYTHON_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "libhiercoll.so"))
        script = "import sys, hiercoll_build; print(hiercoll_build.build_wheel(sys.argv[1]))"
        res = subprocess.run([sys.executable, "-c", script, str(self.tmp / "out")], cwd=copy,
                             env=_clean_env(), capture_output=True, text=True, timeout=120)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("is not inside hiercoll's Go module", res.stderr)
        res = subprocess.run([sys.executable, "-c", script, str(self.tmp / "out")], cwd=copy,
                             env=_clean_env(HIERCOLL_LIB=str(self.lib)), capture_output=True, text=True, timeout=120)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout.strip(), WHEEL)

    def test_sdist(self):
        name = hiercoll_build.build_sdist(str(self.tmp))
        self.assertEqual(name, "hiercoll-0.1.0.tar.gz")
        with tarfile.open(self.tmp / name) as tf:
            names = tf.getnames()
            self.assertIn("Name: hiercoll\n", tf.extractfile("hiercoll-0.1.0/PKG-INFO").read().decode())
        for want in ["pyproject.toml", "README.md", "hiercoll_build.py", "hiercoll/__init__.py",
                     "tests/test_install.py"]:
            self.assertIn(f"hiercoll-0.1.0/{want}", names)
        self.assertFalse([n for n in names if n.endswith(".so") or "__pycache__" in n])

    def test_toml_subset(self):
        text = (PYTHON_DIR / "pyproject.toml").read_text()
        try:
            import tomllib
        except ImportError:
            tomllib = None
        if tomllib is not None:  # the reader for Python < 3.11 reads pyproject.toml as tomllib does
            self.assertEqual(hiercoll_build.read_toml_subset(text), tomllib.loads(text))
        got = hiercoll_build.read_toml_subset('[a.b]  # table\nk = "x # y"  # comment\nl = ["p", "q"]\n')
        self.assertEqual(got, {"a": {"b": {"k": "x # y", "l": ["p", "q"]}}})
        for bad in ['k = "x"\n', "[t]\nk = 'literal'\n", "[t]\nk = [\n"]:
            with self.assertRaises(hiercoll_build.BuildError):
                hiercoll_build.read_toml_subset(bad)


class OfflineInstallTest(unittest.TestCase):
    """pip install --no-index into fresh venvs without setuptools or wheel."""

    @classmethod
    def setUpClass(cls):
        cls.lib = _prebuilt_library()
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="hiercoll-venvs-"))
        probe = cls.tmp / "probe"
        res = subprocess.run([sys.executable, "-m", "venv", str(probe)], env=_clean_env(),
                             capture_output=True, text=True, timeout=300)
        if res.returncode != 0:
            shutil.rmtree(cls.tmp)
            raise unittest.SkipTest(f"cannot make a virtual environment with {sys.executable} -m venv "
                                    f"(on Debian: apt-get install python3-venv): {res.stdout}{res.stderr}".strip())
        # The probe's pip installs into the tests' venvs through --python
        # (pip >= 22.3), so those are made without pip: ensurepip takes
        # seconds per venv. An older pip: each venv gets its own.
        cls.pip_python = str(probe / "bin" / "python")
        res = subprocess.run([cls.pip_python, "-m", "pip", "--python", cls.pip_python, "--version"], env=_clean_env(),
                             capture_output=True, text=True, timeout=300)
        if res.returncode != 0:
            shutil.rmtree(probe)
            cls.pip_python = None

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def venv(self, name):
        """A fresh venv's python, without setuptools and wheel (made without
        pip, or with ensurepip's setuptools of Python < 3.12 removed), checked
        absent."""
        path = self.tmp / name
        python = str(path / "bin" / "python")
        if self.pip_python:
            self.run_ok([sys.executable, "-m", "venv", "--without-pip", str(path)])
        else:
            self.run_ok([sys.executable, "-m", "venv", str(path)])
            self.run_ok([python, "-m", "pip", "uninstall", "-y", "-q", "setuptools", "wheel"])
        out = self.run_ok([python, "-c", "import importlib.util as u; "
                                         "print([m for m in ('setuptools', 'wheel') if u.find_spec(m)])"])
        self.assertEqual(out.strip(), "[]", "setuptools or wheel is still in the venv")
        return python

    def pip(self, python, *args):
        """The command line of pip installing into python's venv."""
        if self.pip_python:
            return [self.pip_python, "-m", "pip", "--python", python, *args]
        return [python, "-m", "pip", *args]

    def run_ok(self, cmd, cwd=None, env=None, timeout=600):
        res = subprocess.run(cmd, cwd=cwd or self.tmp, env=env or _clean_env(),
                             capture_output=True, text=True, timeout=timeout)
        self.assertEqual(res.returncode, 0, f"{' '.join(cmd)}:\n{res.stdout}{res.stderr}")
        return res.stdout

    def smoke(self, python, env=None):
        """The simulated reduce-scatter in the venv, run from outside the checkout."""
        out = self.run_ok([python, "-c", SMOKE], env=env or _clean_env(), timeout=120)
        got = json.loads(out.strip().splitlines()[-1])
        self.assertTrue(got["ok"], got)
        return got

    def site_packages(self, python):
        return pathlib.Path(self.run_ok([python, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"]).strip())

    def test_pip_install_checkout_builds_with_go(self):
        """pip install --no-index ./python from the checkout: the backend builds the library with Go."""
        if hiercoll_build.find_go() is None:
            self.skipTest("no go command on PATH or at /usr/local/go/bin/go: the backend cannot build the library")
        python = self.venv("from-checkout")
        self.run_ok(self.pip(python, "install", "--no-index", "--no-cache-dir", "./python"), cwd=REPO)
        site = self.site_packages(python)
        # The library inside wins over HIERCOLL_LIB once installed.
        got = self.smoke(python, _clean_env(HIERCOLL_LIB=str(self.tmp / "missing" / "libhiercoll.so")))
        self.assertEqual(pathlib.Path(got["package"]).parent, site / "hiercoll")
        self.assertEqual(pathlib.Path(got["library"]), site / "hiercoll" / "libhiercoll.so")
        self.assertTrue((site / "hiercoll" / "hiercoll.h").is_file())

    def test_build_wheel_script_without_go(self):
        """scripts/build-wheel.sh packages HIERCOLL_LIB with no Go on PATH; the
        wheel installs offline and its library is the one loaded."""
        path = _path_without_go()
        self.assertIsNone(shutil.which("go", path=path))
        dist = self.tmp / "dist"
        out = self.run_ok(["bash", str(REPO / "scripts" / "build-wheel.sh"), str(dist)], cwd=REPO,
                          env=_clean_env(PATH=path, HIERCOLL_LIB=str(self.lib)))
        wheel = dist / WHEEL
        self.assertEqual(out.strip().splitlines()[-1], str(wheel))
        python = self.venv("from-wheel")
        self.run_ok(self.pip(python, "install", "--no-index", "--no-cache-dir", str(wheel)),
                    env=_clean_env(PATH=path))
        site = self.site_packages(python)
        got = self.smoke(python, _clean_env(PATH=path, HIERCOLL_LIB=str(self.lib)))
        self.assertEqual(pathlib.Path(got["library"]), site / "hiercoll" / "libhiercoll.so")
        self.assertEqual(_sha256(got["library"]), _sha256(self.lib))

    def test_editable_install_of_a_copy(self):
        """pip install -e of a copy of python/ (no Go module around it) with
        HIERCOLL_LIB: hiercoll loads from the copy, the library beside it."""
        copy = self.tmp / "editable" / "python"
        shutil.copytree(PYTHON_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "libhiercoll.so"))
        path = _path_without_go()
        python = self.venv("editable-venv")
        self.run_ok(self.pip(python, "install", "--no-index", "--no-cache-dir", "-e", str(copy)),
                    env=_clean_env(PATH=path, HIERCOLL_LIB=str(self.lib)))
        got = self.smoke(python, _clean_env(PATH=path))
        self.assertEqual(pathlib.Path(got["package"]), copy / "hiercoll" / "__init__.py")
        self.assertEqual(pathlib.Path(got["library"]), copy / "hiercoll" / "libhiercoll.so")
        self.assertEqual(_sha256(got["library"]), _sha256(self.lib))


if __name__ == "__main__":
    unittest.main()
