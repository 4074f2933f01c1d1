"""Word count over a directory of text files of uneven sizes (the dask-memusage example).

The corpus is invented, not downloaded: a vocabulary of made-up words drawn with a
Zipf-Mandelbrot law, decorated with capitals and punctuation that normalisation must
undo. Each file has its own random streams (words, decoration), so the exact answer
can be recomputed from the word stream alone (`expected`) without reading the text.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import dask.bag as db
import numpy as np
from dask.bag import Item
from fsspec import AbstractFileSystem
from fsspec.core import url_to_fs

from daskbench.text import format_bytes
from daskbench.workloads.base import Inputs, Workload, check_size

TOP = 10
#: Words drawn per batch while writing; part of the generator's identity (changes the text).
BATCH_WORDS = 1_000_000
_PUNCTUATION = string.punctuation + "“”‘’"
_SIGMA = 0.75  # spread of the small files' lengths (lognormal)
_BYTES_PER_WORD = 4.76  # mean encoded token + separator, measured on the generator
_LOGNORMAL_MEAN = float(np.exp(_SIGMA**2 / 2))  # mean / median of the small files' lengths


@dataclass(frozen=True)
class CorpusSpec:
    """A few large files and many small ones; small files vary in length (lognormal)."""

    large_files: int
    large_words: int
    small_files: int
    small_words: int  # median words of a small file
    vocabulary: int
    blocksize: int  # bytes per bag partition when reading; large files split into blocks


SIZES: dict[str, CorpusSpec] = {
    "tiny": CorpusSpec(2, 20_000, 12, 1_000, 2_000, 64 * 2**10),
    "small": CorpusSpec(3, 4_000_000, 60, 80_000, 50_000, 16 * 2**20),
    "medium": CorpusSpec(8, 40_000_000, 400, 400_000, 100_000, 64 * 2**20),
    "large": CorpusSpec(40, 200_000_000, 4_000, 1_000_000, 200_000, 128 * 2**20),
}


def generator_params(size: str) -> dict[str, Any]:
    """Everything that determines the files; the data cache is keyed by its hash.

    ``format`` is the generator's version: bump it whenever a change to this module
    changes the text written, so old datasets are not reused.
    """
    return {**asdict(check_size(size, SIZES)), "batch_words": BATCH_WORDS, "sigma": _SIGMA, "format": 1}


def describe(size: str) -> list[dict[str, Any]]:
    """The README row at ``size``: approximate text bytes, file count, read blocksize."""
    spec = check_size(size, SIZES)
    files = spec.large_files + spec.small_files
    words = spec.large_files * spec.large_words + spec.small_files * spec.small_words * _LOGNORMAL_MEAN
    approx = words * _BYTES_PER_WORD
    return [
        {
            "workload": "wordcount",
            "size": size,
            "input": f"~{format_bytes(approx)} text, {files} files",
            "chunks": f"{format_bytes(spec.blocksize)} blocks",
            "input_bytes": int(approx),
        }
    ]


# -- the corpus ---------------------------------------------------------------------------


def vocabulary(n: int, seed: int) -> list[str]:
    """``n`` distinct invented lowercase words, built from consonant-vowel syllables."""
    rng = np.random.default_rng([seed, 7])
    onsets = [*"bcdfghjklmnprstvwz", "ch", "sh", "th", "tr", "st", "pl"]
    vowels = [*"aeiou", "ai", "ea", "ou", "oo"]
    words: dict[str, None] = {}
    while len(words) < n:
        lengths = rng.integers(1, 5, size=n)
        onset = rng.integers(len(onsets), size=(n, 4))
        vowel = rng.integers(len(vowels), size=(n, 4))
        tail = rng.random(n) < 0.3
        for i in range(n):
            word = "".join(onsets[onset[i, j]] + vowels[vowel[i, j]] for j in range(lengths[i]))
            words.setdefault(word + ("n" if tail[i] else ""))
    return sorted(list(words)[:n], key=len)  # frequent words are short, as in real text


def zipf_probabilities(n: int, exponent: float = 1.1, shift: float = 2.7) -> np.ndarray:
    """Zipf-Mandelbrot law: p(rank) proportional to 1 / (rank + shift) ** exponent."""
    weights = 1.0 / (np.arange(1, n + 1) + shift) ** exponent
    return weights / weights.sum()


def file_words(spec: CorpusSpec, seed: int) -> dict[str, int]:
    """File name -> number of words; a few large files, many small ones of varying length."""
    rng = np.random.default_rng([seed, 11])
    small = np.maximum(1, rng.lognormal(0.0, _SIGMA, spec.small_files) * spec.small_words).astype(int)
    sizes = {f"large-{i:03d}.txt": spec.large_words for i in range(spec.large_files)}
    sizes.update({f"small-{i:04d}.txt": int(n) for i, n in enumerate(small)})
    return sizes


def _word_batches(file_index: int, n_words: int, probabilities: np.ndarray, seed: int) -> Iterator[np.ndarray]:
    rng = np.random.default_rng([seed, file_index, 0])
    for start in range(0, n_words, BATCH_WORDS):
        yield rng.choice(len(probabilities), size=min(BATCH_WORDS, n_words - start), p=probabilities)


def _variants(words: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each word as written in the text: mostly plain, sometimes capitalised or punctuated."""
    forms = [
        ("{w}", 0.80),
        ("{c}", 0.07),
        ("{w},", 0.05),
        ("{w}.", 0.03),
        ("{c}.", 0.01),
        ("“{w}”", 0.01),
        ("{u}", 0.01),
        ("({w})", 0.01),
        ("{w} --", 0.01),
    ]
    table = np.array([[f.format(w=w, c=w.capitalize(), u=w.upper()) for f, _ in forms] for w in words], dtype=object)
    weights = np.array([p for _, p in forms])
    return table, weights / weights.sum()


def _text_batches(
    file_index: int, n_words: int, seed: int, forms: tuple[np.ndarray, np.ndarray], probabilities: np.ndarray
) -> Iterator[str]:
    table, form_p = forms
    rng = np.random.default_rng([seed, file_index, 1])
    for indices in _word_batches(file_index, n_words, probabilities, seed):
        chosen = rng.choice(len(form_p), size=len(indices), p=form_p)
        pieces = np.empty(2 * len(indices), dtype=object)
        pieces[0::2] = table[indices, chosen]
        pieces[1::2] = np.where(rng.random(len(indices)) < 1 / 12, "\n", " ")
        pieces[-1] = "\n"
        yield "".join(pieces)


def write_corpus(fs: AbstractFileSystem, root: str, size: str, seed: int) -> None:
    """Write the corpus for ``size`` under ``root`` (one ``*.txt`` per file)."""
    spec = check_size(size, SIZES)
    forms = _variants(vocabulary(spec.vocabulary, seed))
    probabilities = zipf_probabilities(spec.vocabulary)
    fs.makedirs(root, exist_ok=True)
    for index, (name, n_words) in enumerate(file_words(spec, seed).items()):
        with fs.open(f"{root}/{name}", "w", encoding="utf-8") as handle:
            for text in _text_batches(index, n_words, seed, forms, probabilities):
                handle.write(text)


def expected(size: str, seed: int) -> dict[str, Any]:
    """The exact answer of `count_words` on the corpus, from the word streams alone."""
    spec = check_size(size, SIZES)
    words = vocabulary(spec.vocabulary, seed)
    probabilities = zipf_probabilities(spec.vocabulary)
    per_file, overall = {}, np.zeros(spec.vocabulary, dtype=np.int64)
    for index, (name, n_words) in enumerate(file_words(spec, seed).items()):
        counts = np.zeros(spec.vocabulary, dtype=np.int64)
        for batch in _word_batches(index, n_words, probabilities, seed):
            counts += np.bincount(batch, minlength=spec.vocabulary)
        overall += counts
        per_file[name] = _top(_as_counter(words, counts))
    totals = _as_counter(words, overall)
    return {"words": int(overall.sum()), "distinct": len(totals), "top": _top(totals), "per_file": per_file}


def _as_counter(words: list[str], counts: np.ndarray) -> Counter[str]:
    return Counter({words[i]: int(counts[i]) for i in np.flatnonzero(counts)})


# -- the workload -------------------------------------------------------------------------


def normalise(line: str) -> list[str]:
    """Split a line into lowercase words with surrounding punctuation removed."""
    words = (token.strip(_PUNCTUATION).lower() for token in line.split())
    return [word for word in words if word]


def count_words(urlpath: str, storage_options: dict[str, Any] | None = None, blocksize: int | None = None) -> Item:
    """Lazy word count of the ``*.txt`` files under ``urlpath``.

    Computes to ``{"words", "distinct", "top", "per_file"}``: total words, distinct
    words, the top-10 ``(word, count)`` overall and per file (by file name); ties are
    broken alphabetically so the answer is exact. A tree reduction: a file read whole
    by one partition is cut to its top 10 at once, so only the few files split into
    blocks carry full counts up the tree.
    """
    options = storage_options or {}
    pattern = f"{urlpath}/*.txt"
    whole = _files_read_whole(pattern, options, blocksize)
    lines = db.read_text(pattern, blocksize=blocksize, include_path=True, storage_options=options)
    tallies = lines.reduction(partial(_tally_partition, whole), _merge_tallies, split_every=8)
    return tallies.apply(_summarise)


def count_words_for(size: str, urlpath: str, storage_options: dict[str, Any] | None = None) -> Item:
    """`count_words` with the size's read blocksize."""
    return count_words(urlpath, storage_options, check_size(size, SIZES).blocksize)


@dataclass
class Tally:
    """Counts so far: all words, files still open (split in blocks), finished files' top 10."""

    overall: Counter[str] = field(default_factory=Counter)
    open_files: dict[str, Counter[str]] = field(default_factory=dict)
    done: dict[str, list[tuple[str, int]]] = field(default_factory=dict)


def _files_read_whole(pattern: str, options: dict[str, Any], blocksize: int | None) -> frozenset[str]:
    """Names of the files that one partition reads entirely (half a block or less, for margin)."""
    fs, path = url_to_fs(pattern, **options)
    found = fs.glob(path, detail=True)
    return frozenset(
        name.rsplit("/", 1)[-1]
        for name, info in found.items()
        if blocksize is None or 2 * int(info["size"]) <= blocksize
    )


def _tally_partition(whole: frozenset[str], lines: Iterable[tuple[str, str]]) -> Tally:
    by_file: dict[str, Counter[str]] = {}
    for line, path in lines:
        by_file.setdefault(path.rsplit("/", 1)[-1], Counter()).update(normalise(line))
    tally = Tally()
    for name, counts in by_file.items():
        tally.overall.update(counts)
        if name in whole:
            tally.done[name] = _top(counts)
        else:
            tally.open_files[name] = counts
    return tally


def _merge_tallies(tallies: Iterable[Tally]) -> Tally:
    merged = Tally()
    for tally in tallies:
        merged.overall.update(tally.overall)
        merged.done.update(tally.done)
        for name, counts in tally.open_files.items():
            merged.open_files.setdefault(name, Counter()).update(counts)
    return merged


def _summarise(tally: Tally) -> dict[str, Any]:
    per_file = {**tally.done, **{name: _top(counts) for name, counts in tally.open_files.items()}}
    return {
        "words": sum(tally.overall.values()),
        "distinct": len(tally.overall),
        "top": _top(tally.overall),
        "per_file": dict(sorted(per_file.items())),
    }


def _top(counts: Counter[str]) -> list[tuple[str, int]]:
    """The `TOP` most common words, ties broken alphabetically."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:TOP]


WORKLOAD = Workload("wordcount", ("wordcount",), SIZES, describe, Inputs(generator_params, write_corpus))
