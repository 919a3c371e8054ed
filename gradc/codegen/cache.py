"""On-disk cache of compiled objects, keyed by a hash of (LLVM IR, target triple, CPU, features).

Directory: ``$GRADC_CACHE_DIR`` or ``~/.cache/gradc``; entries are ``<sha256>.o`` written
atomically (temp file + rename), so concurrent processes can share the directory.
``GRADC_CACHE_DIR=off`` (or ``none``) disables the disk cache.  ``stats`` counts hits and
misses in this process (the cache test reads it from a subprocess).
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import llvmlite

FORMAT = "gradc-obj-1"
stats = {"hits": 0, "misses": 0, "writes": 0}


def cache_dir() -> Path | None:
    d = os.environ.get("GRADC_CACHE_DIR")
    if d is not None and d.strip().lower() in ("", "off", "none", "0"):
        return None
    return Path(d) if d else Path.home() / ".cache" / "gradc"


def key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in (FORMAT, llvmlite.__version__) + parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()


def load(k: str, suffix: str = ".o") -> bytes | None:
    d = cache_dir()
    if d is None:
        return None
    try:
        data = (d / (k + suffix)).read_bytes()
    except OSError:
        stats["misses"] += 1
        return None
    stats["hits"] += 1
    return data


def store(k: str, data: bytes, suffix: str = ".o") -> None:
    d = cache_dir()
    if d is None:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=suffix)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, d / (k + suffix))
        stats["writes"] += 1
    except OSError:
        pass   # a read-only or full cache directory only costs recompilation
