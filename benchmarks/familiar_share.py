"""The share of an abstract's words the model knows (``papertrack.models.request.familiar_shares``): real 2025
abstracts against the 2024 files' vocabulary, and texts that are not ML abstracts — where the answer's ``warning``
threshold (``FAMILIAR_SHARE``) comes from (docs/serving.md, "Text the model does not know").

The vocabulary is the training profile's (models/drift.py ``build_profile``): the terms of at least two training
abstracts, here of every ICLR 2024 and ICML 2024 abstract (the default training data's two 2024 files).

    .venv/bin/python benchmarks/familiar_share.py
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


if __name__ == "__main__":
    main()
