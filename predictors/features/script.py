"""Job-script features: ``#SBATCH`` directives, executables, modules and argument tokens, hashed.

No raw text is kept: a script becomes a fixed-length vector of signed counts of its tokens' hashes (the
hashing trick), and the directives it sets.
"""

from __future__ import annotations

import re
import shlex
import zlib

import numpy as np

_DIRECTIVE = re.compile(r"^#SBATCH\s+(.*)$")
_SHORT = {"-t": "time", "-n": "ntasks", "-N": "nodes", "-c": "cpus-per-task", "-p": "partition", "-q": "qos",
          "-A": "account", "-J": "job-name", "-G": "gpus", "-a": "array", "-o": "output", "-e": "error"}
_SHELL_WORDS = {"if", "then", "fi", "else", "for", "do", "done", "while", "export", "set", "cd", "echo", "source",
                "srun", "mpirun", "mpiexec", "time", "exec", "module", "ml", "conda", "activate"}


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def sbatch_directives(text: str) -> dict[str, str]:
    """``#SBATCH`` options as ``{long name: value}`` (``-t 10`` → ``time``; flags without a value map to ``""``)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _DIRECTIVE.match(line.strip())
        if not m:
            continue
        words = _split(m.group(1))
        i = 0
        while i < len(words):
            w = words[i]
            if w.startswith("--"):
                key, sep, val = w[2:].partition("=")
                if not sep and i + 1 < len(words) and not words[i + 1].startswith("-"):
                    val, i = words[i + 1], i + 1
                out[key] = val
            elif w in _SHORT:
                val = words[i + 1] if i + 1 < len(words) else ""
                out[_SHORT[w]] = val
                i += 1
            elif w.startswith("-") and len(w) > 2 and w[:2] in _SHORT:
                out[_SHORT[w[:2]]] = w[2:]
            i += 1
    return out


def _norm(token: str) -> str:
    return re.sub(r"\d+", "#", token.lower())


def script_tokens(text: str) -> list[str]:
    """Tokens of a script: directives, loaded modules, executables and (number-normalised) arguments."""
    toks = [f"sbatch:{k}={_norm(v)}" for k, v in sbatch_directives(text).items()]
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        words = _split(s)
        if not words:
            continue
        if words[0] in ("module", "ml") and len(words) > 1:
            mods = words[2:] if words[1] in ("load", "add") else words[1:]
            toks += [f"module:{m.split('/')[0].lower()}" for m in mods if not m.startswith("-")]
            continue
        exe = next((w for w in words if w not in _SHELL_WORDS and not w.startswith("-") and "=" not in w), None)
        if exe is None:
            continue
        toks.append(f"exe:{exe.rsplit('/', 1)[-1].lower()}")
        toks += [f"arg:{_norm(w)}" for w in words[words.index(exe) + 1:]]
    return toks


def hash_tokens(token_lists, n_features: int = 32) -> np.ndarray:
    """Signed hashing trick: one row per token list, ``n_features`` columns (CRC-32, stable across runs)."""
    out = np.zeros((len(token_lists), n_features))
    for i, toks in enumerate(token_lists):
        for t in toks:
            h = zlib.crc32(t.encode("utf-8"))
            out[i, h % n_features] += 1.0 if (h >> 31) & 1 else -1.0
    return out


def script_features(scripts, n_features: int = 32) -> np.ndarray:
    """Hashed token counts of each script (a sequence of text or None; None → NaN row)."""
    texts = list(scripts)
    out = hash_tokens([script_tokens(t) if isinstance(t, str) else [] for t in texts], n_features)
    missing = np.array([not isinstance(t, str) for t in texts], dtype=bool)
    out[missing] = np.nan
    return out
