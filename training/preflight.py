"""A fast check of the training data before any model is fitted: refuse what cannot be trained in this machine's
memory, with one ``error:`` line naming the files and the fix, instead of a sweep that grows until the kernel
kills it.

Training 1,500 records that carried 1,500 distinct labels grew past 18 GB and was killed without a word: a
linear model holds a dense coefficient matrix of labels × features, and the optimiser keeps several copies of
it, in every parallel fit. :func:`check` refuses

* more distinct labels than half the records (when over ``MIN_LABELS_TO_REFUSE``): a label that has one or two
  examples cannot be learned — usually the label field holds an id or a title, not a track;
* a label count whose model would not fit in memory: ``labels × features × 8 bytes × COPIES × parallel fits``
  over ``MEMORY_SHARE`` of the memory available (physical memory, a cgroup limit or an address-space limit,
  whichever is smallest). ``features`` is the words found in at least 2 records plus the character n-grams'
  cap (:data:`papertrack.features.text.FEATURE_SETTINGS`);
* abstracts whose words TF-IDF would all drop (:func:`check_vocabulary`): English stop words, words in fewer
  than ``min_df`` records or in more than ``max_df`` of them — e.g. every abstract the same repeated word.
  scikit-learn stopped the sweep with "After pruning, no terms remain" or "empty vocabulary" tracebacks.
"""

from __future__ import annotations

import os
import resource
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from papertrack.errors import UsageError

MIN_LABELS_TO_REFUSE = 100  # fewer distinct labels than this are never refused for being too many
COPIES = 10  # coefficient-sized arrays a fit holds at once (the model, its gradient, L-BFGS's history)
MEMORY_SHARE = 0.8  # of the available memory the estimate may take


def check(records: Sequence, files: Sequence[str | Path], *, jobs: int = 1, available: int | None = None) -> None:
    """``UsageError`` when ``records`` (with ``.label`` and ``.abstract``) cannot be trained here (module doc)."""
    where = ", ".join(str(f) for f in files)
    df = check_vocabulary(records, where)
    labels = Counter(r.label for r in records if r.label is not None)
    n, k = sum(labels.values()), len(labels)
    if k >= MIN_LABELS_TO_REFUSE and k > n / 2:
        singles = sum(count == 1 for count in labels.values())
        raise UsageError(
            f"{where}: {k:,} distinct labels for {n:,} labeled records ({singles:,} labels have a single record): "
            f"too few examples per label to learn any of them. Is the label field a track ('Area · Subarea')? "
            f"Use fewer, broader labels (merge rare ones with --rename OLD=NEW) or add records"
        )
    need = estimate_bytes(df, k, jobs)
    have = available_memory() if available is None else available
    if have and need > MEMORY_SHARE * have:
        fix = "Train with --jobs 1, use" if jobs > 1 else "Use"
        raise UsageError(
            f"{where}: {k:,} distinct labels need about {_gib(need)} of memory to train ({k:,} labels × "
            f"{features(df):,} features × 8 bytes × {COPIES} copies × {jobs} parallel fit(s)); this machine "
            f"has {_gib(have)}. {fix} fewer labels (merge rare ones with --rename OLD=NEW) or train on a machine "
            f"with more memory"
        )


def check_vocabulary(records: Sequence, where: str) -> Counter[str]:
    """``UsageError`` when the word TF-IDF features every default candidate is built on would keep no term:
    the same analyzer (stop words, accents, token pattern) and the same document-frequency bounds as
    :data:`papertrack.features.text.FEATURE_SETTINGS` ``["word"]``, counted on the abstracts. Returns those counts
    (abstracts per term)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from papertrack.features.text import FEATURE_SETTINGS

    settings = FEATURE_SETTINGS["word"]
    analyze = TfidfVectorizer(**settings).build_analyzer()
    df: Counter[str] = Counter()
    for record in records:
        df.update(set(analyze(record.abstract)))
    n = len(records)
    if not n:
        return df
    low, high = (bound if isinstance(bound, int) else bound * n for bound in (settings["min_df"], settings["max_df"]))
    if any(low <= count <= high for count in df.values()):
        return df
    fix = "Check that the abstract field holds the abstracts, or add records with real abstracts"
    if not df:
        raise UsageError(
            f"{where}: the {n:,} abstracts hold no word to learn from (only English stop words such as 'the', "
            f"single characters or punctuation). {fix}"
        )
    common = [word for word, count in df.most_common(3) if count > high]
    once = sum(count < low for count in df.values())
    why = []
    if common:
        why.append(
            f"{', '.join(repr(w) for w in common)} {'is' if len(common) == 1 else 'are'} in over "
            f"{settings['max_df']:.0%} of them"
        )
    if once:
        single = "a single abstract" if low == 2 else f"fewer than {settings['min_df']} abstracts"
        why.append(f"{once:,} word(s) are in {single}")
    raise UsageError(
        f"{where}: no word is in at least {settings['min_df']} and at most {settings['max_df']:.0%} of the {n:,} "
        f"abstracts ({'; '.join(why)}), so TF-IDF keeps no term to learn from. {fix}"
    )


def features(df: Counter[str]) -> int:
    """Estimated feature count: the words (:func:`check_vocabulary`'s counts) in at least 2 records plus the
    character n-gram cap."""
    from papertrack.features.text import FEATURE_SETTINGS

    words = sum(count >= 2 for count in df.values())
    return words + int(FEATURE_SETTINGS["char"].get("max_features") or 0)


def estimate_bytes(df: Counter[str], n_labels: int, jobs: int = 1) -> int:
    return n_labels * features(df) * 8 * COPIES * max(1, jobs)


def available_memory() -> int | None:
    """The smallest of physical memory, the cgroup's memory limit and the address-space limit (bytes)."""
    limits = []
    try:
        limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    for name in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(name).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            limits.append(int(text))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limits.append(soft)
    return min(limits) if limits else None


def _gib(n: int) -> str:
    return f"{n / (1 << 30):,.1f} GiB"
