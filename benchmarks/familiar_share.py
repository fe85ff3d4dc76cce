"""The share of an abstract's words the model knows (``papertrack.models.request.familiar_shares``): real 2025
abstracts against the 2024 files' vocabulary, and texts that are not ML abstracts — where the answer's ``warning``
threshold (``FAMILIAR_SHARE``) comes from (docs/serving.md, "Text the model does not know").

The vocabulary is the training profile's (models/drift.py ``build_profile``): the terms of at least two training
abstracts, here of every ICLR 2024 and ICML 2024 abstract (the default training data's two 2024 files).

    .venv/bin/python benchmarks/familiar_share.py          # the shares
    .venv/bin/python benchmarks/familiar_share.py --cost   # what the warning costs predict(), paired

``--cost`` fits a TF-IDF word + logistic regression model on the 2024 files (cheaper to predict than the default
ensemble, so the share of time the check takes is an upper bound) and times ``predict`` of 2,000 NeurIPS 2025
abstracts in batches of 500 (as ``label`` calls it) and one by one (as ``/predict``), with the training profile
(the check runs) and without it, alternated.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
from shared_data import DATA

from papertrack.models.drift import analyzer
from papertrack.models.request import FAMILIAR_SHARE, familiar_shares

OTHERS = {
    "chinese": "我们提出了一种用于变压器的稀疏注意力机制，该机制关注学习到的标记子集，降低了自注意力的二次成本，"
    "同时在语言建模和长程基准上与密集注意力相匹配。实验表明，我们的方法在多个数据集上取得了最先进的结果。",
    "chinese_mixed": "我们提出了一种新的 Transformer 模型，用于 LLM 的 fine-tuning，"
    "在 ImageNet 和 GLUE benchmark 上取得了 state-of-the-art 的结果。",
    "french": "Nous proposons un mécanisme d'attention parcimonieuse pour les transformeurs qui réduit le coût "
    "quadratique de l'auto-attention tout en égalant l'attention dense sur les bancs d'essai de "
    "modélisation du langage.",
    "german": "Wir schlagen einen spärlichen Aufmerksamkeitsmechanismus für Transformer vor, der die "
    "quadratischen Kosten der Selbstaufmerksamkeit reduziert und auf Benchmarks zur "
    "Sprachmodellierung mit dichter Aufmerksamkeit gleichzieht.",
    "legal": "This Agreement shall be governed by and construed in accordance with the laws of the State. Any "
    "dispute arising out of or in connection with this Agreement shall be submitted to the exclusive "
    "jurisdiction of the courts.",
    "lorem": "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut "
    "labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco "
    "laboris.",
    "news": "The city council voted on Tuesday to extend the opening hours of public libraries, after residents "
    "complained that the buildings closed too early for people who work late shifts. The mayor said the "
    "change would be funded from the culture budget.",
    "random_words": "banana cathedral sweater puddle trombone glacier pancake lantern wobble meadow kettle "
    "harbor giraffe velvet saddle turnip",
    "recipe": "Preheat the oven to 180 degrees. Cream the butter and sugar until pale and fluffy, then beat in "
    "the eggs one at a time. Fold in the flour, cocoa and a pinch of salt, pour the batter into a "
    "greased tin and bake for 25 minutes until a skewer comes out clean. Let it cool before icing.",
}


def records(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main() -> None:
    tokenize = analyzer()
    df: Counter[str] = Counter()
    for name in ("iclr2024_topics.jsonl", "icml2024_topics.jsonl"):
        for record in records(name):
            df.update(set(tokenize(record["abstract"])))
    vocabulary = frozenset(term for term, count in df.items() if count >= 2)
    print(f"vocabulary: {len(vocabulary):,} terms; warning below {FAMILIAR_SHARE}")
    warned = total = 0
    for name in ("iclr2025_dev_topics.jsonl", "icml2025_dev_topics.jsonl", "neurips2025_dev_topics.jsonl"):
        shares = np.array(familiar_shares([r["abstract"] for r in records(name)], vocabulary))
        low, q01, median = np.quantile(shares, [0.0, 0.01, 0.5])
        print(f"{name}: {len(shares):,} abstracts, min {low:.3f}, 1% {q01:.3f}, median {median:.3f}")
        warned += int((shares < FAMILIAR_SHARE).sum())
        total += len(shares)
    print(f"false warnings: {warned} of {total:,} real 2025 abstracts")
    for name, text in OTHERS.items():
        (share,) = familiar_shares([text], vocabulary)
        print(f"{name}: {share:.3f}{' (warned)' if share < FAMILIAR_SHARE else ''}")


def cost(rounds: int = 5) -> None:
    import time

    from sklearn.linear_model import LogisticRegression

    from papertrack.features.text import tfidf
    from papertrack.models.card import ModelCard
    from papertrack.models.drift import build_profile
    from papertrack.models.estimators import TextClassifier
    from papertrack.models.hierarchy import LabelSpace

    train = records("iclr2024_topics.jsonl") + records("icml2024_topics.jsonl")
    texts, labels = [r["abstract"] for r in train], [r["label"] for r in train]
    space = LabelSpace.from_labels(labels)
    y = space.encode(labels)
    classifier = TextClassifier(tfidf("word"), LogisticRegression(max_iter=300), space.n_labels).fit(texts, y)
    profile = build_profile(texts, y, space, classifier.predict_proba(texts), seed=0)
    card = ModelCard(candidate="bench", family="logreg", data_digest="-", run_id="0" * 32, n_labels=space.n_labels)
    from papertrack.models.artifact import TrackPredictor

    predictor = TrackPredictor(classifier, space, card, training_profile=profile)
    abstracts = [r["abstract"] for r in records("neurips2025_dev_topics.jsonl")][:2000]
    for name, calls in (
        ("batches of 500", [abstracts[i : i + 500] for i in range(0, 2000, 500)]),
        ("one by one", [[a] for a in abstracts[:500]]),
    ):
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(rounds):
            for check in (True, False):
                predictor.training_profile = profile if check else None
                started = time.perf_counter()
                for call in calls:
                    predictor.predict(call)
                times[check].append((time.perf_counter() - started) / sum(map(len, calls)))
        with_check, without = np.median(times[True]), np.median(times[False])
        print(
            f"{name}: {without * 1e3:.3f} ms per abstract without the check, {with_check * 1e3:.3f} with it "
            f"(+{(with_check - without) * 1e6:.0f} us, {with_check / without - 1:+.0%}); medians of {rounds} rounds"
        )


if __name__ == "__main__":
    import sys

    cost() if "--cost" in sys.argv else main()
