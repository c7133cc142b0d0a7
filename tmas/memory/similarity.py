"""Similarities: how alike two texts are, by name, for deduplicating the banks, the lifelong
memory and DeLM's notes, and for ranking experiences and memory items.

A similarity is a function ``scores(query, texts) -> list[float]``: one score in [0, 1] per
text of ``texts`` (1: alike, 0: nothing in common), so one function serves both a pairwise
dedup (``scores(a, [b])[0] >= threshold``) and the ranking of a pool. Built-ins: ``jaccard``
(word sets; the default of ``similarity``) and ``bm25`` (the default of
``memory_similarity``). A plugin adds its own::

    from tmas.plugin import register_similarity

    @register_similarity("same_start")
    def same_start(query, texts):
        return [float(text[:20] == query[:20]) for text in texts]

and a run selects it with ``--set similarity=same_start`` or a spec's ``config:`` block.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence

from tmas.config import TMASConfig
from tmas.registration import declare, owner_of, registry

Similarity = Callable[[str, Sequence[str]], list[float]]


def register_similarity(name: str) -> Callable[[Similarity], Similarity]:
    """Register ``scores(query, texts) -> list[float]`` (each in [0, 1]) as similarity ``name``
    (in :func:`tmas.registration.registry`).

    Example:
        >>> @register_similarity("doc_example_same")
        ... def same(query, texts):
        ...     return [float(text == query) for text in texts]
        >>> similarity_named("doc_example_same")("a", ["a", "b"])
        [1.0, 0.0]
        >>> registry().similarities.remove("doc_example_same")  # (leaves the registry as it was)
    """
    return lambda scores: declare("similarities", name, scores, owner_of(scores))


def similarity_named(name: str) -> Similarity:
    """The similarity registered as ``name`` (its ``__module__`` names the plugin that
    registered it); ValueError naming the known ones otherwise.

    Example:
        >>> similarity_named("no_such_measure")
        Traceback (most recent call last):
        ...
        tmas.registration.UnknownName: unknown similarity 'no_such_measure'; known: bm25, ...
    """
    return registry().similarities[name]  # type: ignore[no-any-return]


def similarities_of(config: TMASConfig) -> list[Similarity]:
    """The similarities a run config names (``similarity``, ``memory_similarity``);
    ValueError naming the known ones when one is unknown.

    Example:
        >>> [s.__name__ for s in similarities_of(TMASConfig())]
        ['jaccard_scores', 'bm25_scores']
    """
    return [similarity_named(config.similarity), similarity_named(config.memory_similarity)]


# -- jaccard -------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


def word_set(text: str) -> frozenset[str]:
    """Lower-cased words and numbers of ``text``.

    Example:
        >>> sorted(word_set("x = 3.5, so X is 3.5"))
        ['3.5', 'is', 'so', 'x']
    """
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the word sets of ``a`` and ``b`` (1.0 for two empty texts).

    Example:
        >>> jaccard("the total is 18", "total is 18")
        0.75
    """
    sa, sb = word_set(a), word_set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


@register_similarity("jaccard")
def jaccard_scores(query: str, texts: Sequence[str]) -> list[float]:
    """Word-set Jaccard similarity of ``query`` and each text (:func:`jaccard`): shared
    words over all words, an absolute score that means the same in any pool.

    Example:
        >>> jaccard_scores("the total is 18", ["total is 18", "apples"])
        [0.75, 0.0]
    """
    return [jaccard(query, text) for text in texts]


# -- bm25 ----------------------------------------------------------------------------------------

# Words that say nothing about what a problem or an item is about.
STOPWORDS = frozenset(
    "a an and are as at be been but by can do does for from has have he her his how i if in "
    "into is it its many much not of on or our she so than that the their them then there "
    "these they this to was we were what when where which who why will with you your".split()
)


def content_words(text: str) -> list[str]:
    """The content words of ``text``, lower-cased.

    Example:
        >>> content_words("What is the capital of France?")
        ['capital', 'france']
    """
    return [word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in STOPWORDS]


@register_similarity("bm25")
def bm25_scores(query: str, texts: Sequence[str]) -> list[float]:
    """Okapi BM25 (``rank_bm25``, over content words) of each text for ``query``, scaled to the
    pool: a text sharing no content word with the query scores 0; each other text scores the
    share of those texts whose BM25 score is at most its own (the best 1, equal BM25 scores
    equal shares). The order is BM25's, but a score says where a text stands in its pool, not
    how alike two texts are: meant for ranking (lifelong-memory retrieval); as a dedup measure
    the best match sharing any content word scores 1.

    Example:
        >>> bm25_scores("how many apples", ["apples cost 3", "trains", "apples and apples"])
        [0.5, 0.0, 1.0]
    """
    from rank_bm25 import BM25Okapi  # imported when a pool is ranked: it brings numpy

    if not texts:
        return []
    words = content_words(query)
    documents = [content_words(text) or ["_"] for text in texts]
    raw = [float(score) for score in BM25Okapi(documents).get_scores(words)]
    shared = [bool(set(words) & set(document)) for document in documents]
    matching = sorted(score for score, share in zip(raw, shared, strict=True) if share)
    return [
        bisect_right(matching, score) / len(matching) if share else 0.0
        for score, share in zip(raw, shared, strict=True)
    ]
