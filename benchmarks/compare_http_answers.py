"""Send the same requests to two running services and compare each answer's status and bytes (a restructuring must
not change what a fixed model answers). Loopback only, ~215 requests, one at a time.

    PAPERTRACK_HOME=STORE .venv/bin/papertrack serve --port 3917                          # this checkout
    PYTHONPATH=OLD_CHECKOUT PAPERTRACK_HOME=STORE .venv/bin/papertrack serve --port 3918  # an older one
    .venv/bin/python benchmarks/compare_http_answers.py --a http://127.0.0.1:3918 --b http://127.0.0.1:3917

Requests: /predict of 120 shared-data abstracts (ICML 2025 and ICLR 2025 dev; top_k 1-5, every third in the
"ICML 2025" taxonomy, every fourth with its title), 40 /predict_batch of 3, 40 /explain, 6 invalid JSON requests,
3 bodies with encoding problems, and GET /metadata, /healthz and an unknown path. Prints each difference and a
count; exit 1 when any differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import httpx
from shared_data import DATA  # benchmarks/ is on sys.path when run as a script


def requests(folder: Path) -> list[tuple[str, dict]]:
    papers = []
    for name in ("icml2025_dev_topics.jsonl", "iclr2025_dev_topics.jsonl"):
        with open(folder / name, encoding="utf-8") as lines:
            papers += [json.loads(line) for _, line in zip(range(60), lines)]
    out: list[tuple[str, dict]] = []
    for i, paper in enumerate(papers):
        body = {"abstract": paper["abstract"], "top_k": 1 + i % 5}
        if i % 3 == 0:
            body["taxonomy"] = "ICML 2025"
        if i % 4 == 0:
            body["title"] = paper.get("title")
        out.append(("/predict", body))
    for i in range(0, 120, 3):
        batch = {"papers": [{"abstract": p["abstract"]} for p in papers[i : i + 3]], "top_k": 3}
        out.append(("/predict_batch", {**batch, **({"taxonomy": "ICML 2025"} if i % 2 else {})}))
    for i in range(40):
        out.append(
            (
                "/explain",
                {"abstract": papers[i]["abstract"], "top_k": 3, **({"taxonomy": "ICML 2025"} if i % 2 else {})},
            )
        )
    out += [
        ("/predict", {"abstract": ""}),
        ("/predict", {"abstract": "x", "top_k": 0}),
        ("/predict", {"abstract": "x", "taxonomy": "NeurIPS 2031"}),
        ("/predict", {"abstrct": "x"}),
        ("/predict_batch", {"papers": []}),
        ("/explain", {"abstract": "graphs", "top_k": 86, "terms": 50}),
    ]
    return out


RAW = [b'{"abstract": "graphs \\ud800 and kernels"}', b'\xef\xbb\xbf{"abstract": "x"}', b'{"abstract": ']


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="one service's URL (loopback)")
    parser.add_argument("--b", required=True, help="the other's")
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="the shared data folder (default: PAPERTRACK_DATA_DIR, else ../shared/data)",
    )
    args = parser.parse_args()
    folder = args.data or DATA
    same = differ = 0
    with httpx.Client(timeout=60) as client:
        calls = [("POST", path, {"json": body}) for path, body in requests(folder)]
        calls += [
            ("POST", "/predict", {"content": raw, "headers": {"content-type": "application/json"}}) for raw in RAW
        ]
        calls += [("GET", path, {}) for path in ("/metadata", "/healthz", "/nope")]
        for method, path, options in calls:
            a = client.request(method, args.a + path, **options)
            b = client.request(method, args.b + path, **options)
            if (a.status_code, a.content) == (b.status_code, b.content):
                same += 1
            else:
                differ += 1
                print(
                    f"differs: {method} {path}: {a.status_code} {a.content[:200]!r}"
                    f" vs {b.status_code} {b.content[:200]!r}"
                )
    print(f"{same} identical, {differ} different of {same + differ} answers (status and body bytes)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
