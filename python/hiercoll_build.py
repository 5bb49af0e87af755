"""hiercoll's PEP 517 / PEP 660 build backend, standard library only, so that
`pip install ./python` works offline in a bare virtual environment (no
setuptools, no wheel, nothing downloaded: pyproject.toml requires nothing).

The wheel carries the package and libhiercoll.so, which comes from
  1. HIERCOLL_LIB, when set (it must name the library: a library built
     elsewhere, e.g. by scripts/build-capi.sh), else
  2. `go build -trimpath -buildmode=c-shared ./capi` in the Go module this
     directory sits in (Go on PATH, else /usr/local/go/bin/go; cgo needs gcc),
     built into a temporary directory: the checkout is left as it was.
Without either it fails, saying so. pip >= 21.3 builds a local directory in
place, so the module is the parent of this directory; a copied tree (older
pip, an sdist) has no module around it and needs HIERCOLL_LIB.

The wheel's tag is py3-none-linux_<arch>: the library is a glibc binary for
the architecture its ELF header names (x86_64 or aarch64) and links no
libpython. scripts/build-wheel.sh calls build_wheel directly (no pip).
"""

import base64
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
import time
import zipfile

SOURCE = pathlib.Path(__file__).resolve().parent  # python/: pyproject.toml, hiercoll/
PACKAGE = "hiercoll"
LIB_NAME = "libhiercoll.so"
ENV_LIB = "HIERCOLL_LIB"
GO_MODULE = "github.com/seed12530e24/hiercoll"
GO_FALLBACK = pathlib.Path("/usr/local/go/bin/go")
# Written into the wheel only: its presence tells hiercoll._lib that the
# package is installed from a wheel and carries its library.
WHEEL_MARKER = "_wheel.py"

# ELF e_machine -> the platform tag's architecture.
_ELF_ARCH = {62: "x86_64", 183: "aarch64"}
# The [project] keys metadata() writes; any other is an error, not dropped.
_PROJECT_KEYS = {"name", "version", "description", "readme", "requires-python",
                 "dependencies", "optional-dependencies"}


class BuildError(Exception):
    """A build that cannot go on; the message says what to do."""


# --- pyproject.toml ---------------------------------------------------------

def read_toml(text):
    """pyproject.toml as a dict: tomllib where there is one (Python 3.11+),
    else read_toml_subset."""
    try:
        import tomllib
    except ImportError:
        return read_toml_subset(text)
    return tomllib.loads(text)


def read_toml_subset(text):
    """The TOML this project's pyproject.toml uses, for Python < 3.11:
    [table] and [dotted.table] headers, and key = value lines whose value is
    a basic string or a one-line array of them (read as JSON), with comments.
    Anything else is an error naming the line."""
    doc, table = {}, None
    for n, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]") and not line.startswith("[["):
            table = doc
            for part in line[1:-1].split("."):
                table = table.setdefault(part.strip(), {})
            continue
        key, eq, value = (part.strip() for part in line.partition("="))
        if not eq or table is None or not key or not all(c.isalnum() or c in "-_" for c in key):
            raise BuildError(f"pyproject.toml line {n}: {raw!r} is not a key = value line this "
                             f"backend can read without tomllib (Python < 3.11)")
        try:
            table[key] = json.loads(value)
        except ValueError:
            raise BuildError(f"pyproject.toml line {n}: {value!r}: without tomllib (Python < 3.11) "
                             f"this backend reads only basic strings and one-line arrays of them") from None
    return doc


def _strip_comment(line):
    """line without its # comment (a '#' inside a basic string stays)."""
    in_string = escaped = False
    for i, c in enumerate(line):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "#":
            return line[:i]
    return line


def project():
    """The [project] table of pyproject.toml, checked against what
    metadata() writes."""
    meta = read_toml((SOURCE / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    unknown = sorted(set(meta) - _PROJECT_KEYS)
    if unknown:
        raise BuildError(f"pyproject.toml [project] {', '.join(unknown)}: hiercoll_build does not "
                         f"write these into the metadata; teach metadata() about them")
    for key in ("name", "version"):
        if not isinstance(meta.get(key), str):
            raise BuildError(f"pyproject.toml [project] needs a {key} string")
    return meta


def metadata(meta):
    """The core metadata (METADATA, PKG-INFO) of the [project] table."""
    lines = ["Metadata-Version: 2.1", f"Name: {meta['name']}", f"Version: {meta['version']}"]
    if "description" in meta:
        lines.append(f"Summary: {meta['description']}")
    if "requires-python" in meta:
        lines.append(f"Requires-Python: {meta['requires-python']}")
    lines += [f"Requires-Dist: {req}" for req in meta.get("dependencies", [])]
    for extra, reqs in meta.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for req in reqs:
            req, _, marker = (part.strip() for part in req.partition(";"))
            marker = f'({marker}) and extra == "{extra}"' if marker else f'extra == "{extra}"'
            lines.append(f"Requires-Dist: {req}; {marker}")
    body = ""
    if "readme" in meta:
        readme = SOURCE / meta["readme"]
        kind = "text/markdown" if readme.suffix == ".md" else "text/plain"
        lines.append(f"Description-Content-Type: {kind}")
        body = "\n" + readme.read_text(encoding="utf-8")
    return "\n".join(lines) + "\n" + body


def _names(meta):
    """(distribution name for file names, dist-info directory name)."""
    name = meta["name"].replace("-", "_").replace(".", "_").lower()
    version = meta["version"].replace("-", "_")
    return f"{name}-{version}", f"{name}-{version}.dist-info"


# --- the library --------------------------------------------------------------

def repo_root():
    """The Go module root around this directory (its parent, when its go.mod
    declares hiercoll's module), else None."""
    root = SOURCE.parent
    try:
        gomod = (root / "go.mod").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in gomod.splitlines():
        if line.split() == ["module", GO_MODULE]:
            return root if (root / "capi").is_dir() else None
    return None


def find_go():
    """The go command: on PATH, else /usr/local/go/bin/go; else None."""
    found = shutil.which("go")
    if found:
        return found
    if GO_FALLBACK.is_file() and os.access(GO_FALLBACK, os.X_OK):
        return str(GO_FALLBACK)
    return None


def elf_arch(path):
    """The architecture of an ELF shared object (x86_64, aarch64), checked
    to be a 64-bit little-endian shared object."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        raise BuildError(f"{path} is not an ELF file, so not a libhiercoll.so")
    if head[4] != 2 or head[5] != 1 or int.from_bytes(head[16:18], "little") != 3:
        raise BuildError(f"{path} is not a 64-bit little-endian ELF shared object")
    machine = int.from_bytes(head[18:20], "little")
    if machine not in _ELF_ARCH:
        raise BuildError(f"{path}: ELF machine {machine} is neither x86_64 nor aarch64")
    return _ELF_ARCH[machine]


def _log(msg):
    print(f"hiercoll_build: {msg}", file=sys.stderr, flush=True)


def _abi_version():
    """ABI_VERSION of hiercoll/_lib.py, read without importing the package."""
    for line in (SOURCE / PACKAGE / "_lib.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("ABI_VERSION ="):
            return int(line.split("=")[1].split("#")[0])
    raise BuildError("hiercoll/_lib.py has no ABI_VERSION line")


def check_library(path):
    """Checks the library is one this package can load: its ELF header, and,
    where it runs on this machine, its hc_abi_version (in a child process).
    Returns its architecture."""
    arch = elf_arch(path)
    if arch != platform.machine():
        _log(f"{path} is an {arch} library: its ABI version is checked only on {arch}")
        return arch
    # Loaded as hiercoll._lib loads it (RTLD_NOW: an unresolved symbol fails here, not at import).
    probe = ("import ctypes, os, sys; "
             "print(ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_LOCAL).hc_abi_version())")
    res = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=120)
    want = _abi_version()
    if res.returncode != 0 or res.stdout.strip() != str(want):
        raise BuildError(f"{path} does not load here as ABI version {want} "
                         f"(got {res.stdout.strip() or 'nothing'}; {res.stderr.strip()[-500:]}); "
                         f"rebuild it from this checkout (scripts/build-capi.sh)")
    return arch


def library(workdir):
    """The libhiercoll.so to package: HIERCOLL_LIB's file, else one built
    with Go into workdir. Returns (path, architecture)."""
    env = os.environ.get(ENV_LIB)
    if env:
        path = pathlib.Path(env).expanduser().resolve()
        if not path.is_file():
            raise BuildError(f"{ENV_LIB}={env} names no file; point it at a libhiercoll.so "
                             f"(scripts/build-capi.sh writes build/libhiercoll.so), or unset it "
                             f"to build the library with Go")
        _log(f"using {ENV_LIB}={path}")
        return path, check_library(path)
    root, go = repo_root(), find_go()
    if root is None or go is None:
        why = (f"{SOURCE} is not inside hiercoll's Go module (pip < 21.3 and sdists build a copy "
               f"of the tree; build from the checkout with pip >= 21.3)" if root is None else
               "no go command on PATH or at /usr/local/go/bin/go")
        raise BuildError(f"cannot get {LIB_NAME}: {ENV_LIB} is not set and the library cannot be "
                         f"built here: {why}. Either install Go (and gcc) and build from the "
                         f"repository, or set {ENV_LIB} to a library built where Go is "
                         f"(scripts/build-capi.sh writes build/{LIB_NAME}; scripts/build-wheel.sh "
                         f"makes a wheel that installs without Go)")
    out = pathlib.Path(workdir) / LIB_NAME
    cmd = [go, "build", "-trimpath", "-buildmode=c-shared", "-o", str(out), "./capi"]
    _log(f"building {LIB_NAME} in {root}: {' '.join(cmd)}")
    res = subprocess.run(cmd, cwd=root, env=dict(os.environ, CGO_ENABLED="1"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        raise BuildError(f"go build of {LIB_NAME} failed (exit {res.returncode}); cgo needs gcc, "
                         f"and offline Go needs its modules in the module cache (go mod download):\n"
                         f"{res.stdout}")
    return out, check_library(out)


def wheel_tag(arch):
    return f"py3-none-linux_{arch}"


# --- archives -----------------------------------------------------------------

def _date_time():
    """Archive timestamps: SOURCE_DATE_EPOCH, else 1980-01-01 (reproducible)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return max(time.gmtime(int(epoch))[:6], (1980, 1, 1, 0, 0, 0))
    return (1980, 1, 1, 0, 0, 0)


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def package_files():
    """(archive name, bytes, mode) of the package's sources: its .py files and
    py.typed, without build outputs (a copied-in library, __pycache__)."""
    files = []
    base = SOURCE / PACKAGE
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(SOURCE)
        if not path.is_file() or "__pycache__" in rel.parts or path.name == WHEEL_MARKER:
            continue
        if path.suffix == ".py" or path.name == "py.typed":
            files.append((rel.as_posix(), path.read_bytes(), 0o644))
    return files


def write_wheel(wheel_directory, meta, tag, files):
    """Writes <name>-<version>-<tag>.whl of files plus its dist-info (METADATA,
    WHEEL, RECORD) into wheel_directory; returns the file's name."""
    stem, dist_info = _names(meta)
    name = f"{stem}-{tag}.whl"
    files = list(files) + [
        (f"{dist_info}/METADATA", metadata(meta).encode(), 0o644),
        (f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: hiercoll_build\n"
                                f"Root-Is-Purelib: false\nTag: {tag}\n").encode(), 0o644),
    ]
    record = "".join(f"{arc},{_digest(data)},{len(data)}\n" for arc, data, _ in files)
    files.append((f"{dist_info}/RECORD", (record + f"{dist_info}/RECORD,,\n").encode(), 0o644))
    os.makedirs(wheel_directory, exist_ok=True)
    tmp = pathlib.Path(wheel_directory) / (name + ".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data, mode in files:
            info = zipfile.ZipInfo(arc, _date_time())
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    os.replace(tmp, pathlib.Path(wheel_directory) / name)
    return name


# --- PEP 517 / PEP 660 hooks ------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """Writes <name>-<version>.dist-info/METADATA (without building the library)."""
    meta = project()
    dist_info = pathlib.Path(metadata_directory) / _names(meta)[1]
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(metadata(meta), encoding="utf-8")
    return dist_info.name


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """The wheel: the package, its library, the C header where the checkout
    is, and the marker that makes hiercoll._lib load the library inside."""
    meta = project()
    with tempfile.TemporaryDirectory(prefix="hiercoll-build-") as work:
        lib, arch = library(work)
        files = package_files()
        files.append((f"{PACKAGE}/{LIB_NAME}", lib.read_bytes(), 0o755))
        root = repo_root()
        if root is not None:
            files.append((f"{PACKAGE}/hiercoll.h", (root / "capi" / "hiercoll.h").read_bytes(), 0o644))
        marker = ('"""Written by hiercoll_build into the wheel: this installed package carries its\n'
                  'own library, which hiercoll._lib loads (HIERCOLL_LIB is for the checkout)."""\n\n'
                  f'LIBRARY = "{LIB_NAME}"\n')
        files.append((f"{PACKAGE}/{WHEEL_MARKER}", marker.encode(), 0o644))
        name = write_wheel(wheel_directory, meta, wheel_tag(arch), files)
    _log(f"wrote {name}")
    return name


_EDITABLE_FINDER = '''"""hiercoll installed editable (pip install -e): imported by a .pth file, it
makes `import hiercoll` load the package from its source tree."""

import importlib.abc
import importlib.util
import sys

PACKAGE_DIR = {package_dir!r}


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "hiercoll":
            return None
        return importlib.util.spec_from_file_location(
            name, PACKAGE_DIR + "/__init__.py", submodule_search_locations=[PACKAGE_DIR])


sys.meta_path.append(_Finder())
'''


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: a wheel whose .pth makes `import hiercoll` load this source
    tree, with the library put next to the package (hiercoll/libhiercoll.so,
    where scripts/build-capi.sh copies it; HIERCOLL_LIB still overrides it at
    run time, as for any uninstalled checkout)."""
    meta = project()
    with tempfile.TemporaryDirectory(prefix="hiercoll-build-") as work:
        lib, arch = library(work)
        dest = SOURCE / PACKAGE / LIB_NAME
        if not (dest.exists() and os.path.samefile(lib, dest)):
            tmp = dest.with_name(LIB_NAME + ".part")
            shutil.copyfile(lib, tmp)
            os.chmod(tmp, 0o755)
            os.replace(tmp, dest)
        _log(f"library for the editable install: {dest}")
    finder = _EDITABLE_FINDER.format(package_dir=str(SOURCE / PACKAGE))
    files = [("_hiercoll_editable.py", finder.encode(), 0o644),
             ("__editable__.hiercoll.pth", b"import _hiercoll_editable\n", 0o644)]
    return write_wheel(wheel_directory, meta, wheel_tag(arch), files)


def build_sdist(sdist_directory, config_settings=None):
    """<name>-<version>.tar.gz of python/: pyproject.toml, README.md, this
    backend, the package and its tests. It holds no Go sources, so a wheel
    built from it needs HIERCOLL_LIB."""
    meta = project()
    stem = _names(meta)[0]
    members = [("PKG-INFO", metadata(meta).encode())]
    for rel in ("pyproject.toml", "README.md", "hiercoll_build.py"):
        members.append((rel, (SOURCE / rel).read_bytes()))
    members += [(arc, data) for arc, data, _ in package_files()]
    members += [(p.relative_to(SOURCE).as_posix(), p.read_bytes())
                for p in sorted((SOURCE / "tests").glob("*.py"))]
    name = f"{stem}.tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    with tarfile.open(pathlib.Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for arc, data in members:
            info = tarfile.TarInfo(f"{stem}/{arc}")
            info.size, info.mode, info.mtime = len(data), 0o644, mtime
            tf.addfile(info, io.BytesIO(data))
    return name
