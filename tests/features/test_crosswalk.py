"""Crosswalk files: the shipped one, the mapping rules, and every bad file named with its line."""

from __future__ import annotations

import pytest

from papertrack.features.crosswalk import CrosswalkError, read_crosswalk, shipped_crosswalks


def _write(tmp_path, text: str):
    path = tmp_path / "cw.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _shipped(target: str):
    (cw,) = [cw for cw in map(read_crosswalk, shipped_crosswalks()) if cw.target == target]
    return cw


def test_the_shipped_crosswalk_maps_the_known_icml_2025_changes():
    cw = _shipped("ICML 2025")
    assert (cw.source, cw.target) == ("ICML 2024", "ICML 2025")
    # an area rename reaches every track under it, the area-only label included
    assert cw.apply("Miscellaneous Aspects of Machine Learning · Causality") == (
        ("General Machine Learning · Causality", 1.0),
    )
    assert cw.apply("Miscellaneous Aspects of Machine Learning") == (("General Machine Learning", 1.0),)
    # a track entry wins over its area's rename
    assert cw.apply("Miscellaneous Aspects of Machine Learning · General Machine Learning Techniques") == (
        ("General Machine Learning · Everything Else", 1.0),
    )
    # a merge: two old names, one new
    merged = "Applications · Chemistry, Physics, and Earth Sciences"
    assert cw.apply("Applications · Physics") == ((merged, 1.0),)
    assert cw.apply("Applications · Chemistry and Drug Discovery") == ((merged, 1.0),)
    # a split, with its shares
    split = dict(cw.apply("Social Aspects · Trustworthy Machine Learning"))
    assert set(split) == {f"Social Aspects · {s}" for s in ("Safety", "Security", "Alignment", "Robustness")}
    assert sum(split.values()) == pytest.approx(1.0)
    # an unchanged name maps to itself
    assert cw.apply("Deep Learning · Large Language Models") == (("Deep Learning · Large Language Models", 1.0),)


def test_the_shipped_neurips_2025_crosswalk_maps_older_names_into_neurips_names_only(data_dir):
    import json

    cw = _shipped("NeurIPS 2025")
    path = data_dir / "neurips2025_dev_topics.jsonl"
    if not path.exists():
        pytest.skip("neurips2025_dev_topics.jsonl not in the shared data")
    with open(path, encoding="utf-8") as lines:
        neurips = {json.loads(line)["label"] for line in lines}
    assert cw.targets() <= neurips  # every new name is one of NeurIPS 2025's
    assert not cw.areas  # no area line: "Miscellaneous Aspects of Machine Learning · X" are mapped one by one
    # 2024's application track is an area now; the split teaches each of its three largest tracks
    split = dict(cw.apply("Applications · Computer Vision"))
    assert {label.split(" · ")[0] for label in split} == {"Computer Vision"} and min(split.values()) >= 0.2
    # the built-in rename's new name goes back to the name NeurIPS kept
    assert cw.apply("Applications · Genetics, Cell Biology, Health, etc") == (
        ("Applications · Genetics, Cell Biology, etc", 1.0),
    )
    assert cw.apply("Theory · Learning Theory") == (("Theory · Learning Theory", 1.0),)  # a kept name


def test_a_label_no_record_has_is_named_with_its_line(tmp_path):
    cw = read_crosswalk(
        _write(tmp_path, "from: A 2024\nto: B 2025\nmap:\n  Theory · Learning Theory: Theory · Everything Else\n")
    )
    with pytest.raises(CrosswalkError, match=r"cw\.yaml:4: 'Theory · Learning Theory' is the label of no"):
        cw.check_names({"Theory · Game Theory"})
    cw.check_names({"Theory · Learning Theory"})  # present: no error


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "to: B\nmap:\n  Theory · X:\n    Theory · Y: 0.5\n    Theory · Z: 0.4\n",
            r"cw\.yaml:3: the shares of 'Theory · X' sum to 0\.9, not 1",
        ),
        (
            "to: B\nmap:\n  Theory · X:\n    Theory · Y: many\n",
            r"cw\.yaml:4: the share of 'Theory · Y' must be a number",
        ),
        ("to: B\nmap:\n  Theory · X:\n    Theory · Y: 1.5\n", r"cw\.yaml:4: the share of 'Theory · Y' must be in"),
        ("to: B\nmap:\n  Theory · X: Theory · Y\n  Theory · Y: Theory · X\n", r"cw\.yaml:3: the crosswalk has a cycle"),
        (
            "to: B\nmap:\n  Theory · Learning Theory: Theory · Y\n  theory · learning theory: Theory · Z\n",
            r"cw\.yaml:4: 'Theory · Learning Theory' is mapped twice \(first on line 3\)",
        ),
        ("map:\n  Theory · X: Theory · Y\n", r"'to' must name the target taxonomy"),
        ("to: B\nmap: [1, 2]\n", r"cw\.yaml:2: 'map' must be a mapping"),
        ("to: B\nmapping: {}\n", r"unknown key\(s\) mapping"),
        ("to: B\nmap:\n  Theory · X: [a\n", r"cw\.yaml:\d+: not valid YAML"),
        ("to: B\nmap:\n  Theory · X: ''\n", r"cw\.yaml:3: a track name must be a non-empty string"),
        ("to: B\nmap:\n  Theory · X: &a Theory · Y\n  Theory · Z: *a\n", r"cw\.yaml:3: YAML anchors and aliases"),
        ('to: "B\\x1b[31m"\nmap:\n  Theory · X: Theory · Y\n', r"cw\.yaml:1: a taxonomy name cannot contain '\\x1b'"),
        ("to: <script>B</script>\nmap:\n  Theory · X: Theory · Y\n", r"cw\.yaml:1: a taxonomy name cannot contain '<'"),
        ('to: B\nmap:\n  "Theory · X\\u202e": Theory · Y\n', r"cw\.yaml:3: a track name cannot contain"),
        ("to: B\nmap:\n  Theory · X:\n    Theory · Y:\n      Theory · Z: 1\n", r"cw\.yaml:5: nested 4 levels deep"),
        (
            "to: B\nmap:\n  Theory · X: Theory · Y\n  Theory · Y: Theory · Z\n  Theory · Z: Theory · X\n",
            r"cw\.yaml:3: the crosswalk has a cycle: Theory · X -> Theory · Y -> Theory · Z -> Theory · X",
        ),
    ],
)
def test_bad_crosswalks_are_refused_naming_the_file_and_line(tmp_path, text, message):
    with pytest.raises(CrosswalkError, match=message):
        read_crosswalk(_write(tmp_path, text))


def test_an_alias_bomb_is_refused_at_its_first_anchor(tmp_path):
    """A small file of anchors and aliases (YAML's billion laughs: 115 KB would expand to millions of pairs) is
    refused at its first anchor, before anything is built."""
    names = "\n".join(f"  - &n{i} Theory · Name {i}" for i in range(2000))
    refs = "\n".join("  Theory · Old {i}: [" + ", ".join(f"*n{j}" for j in range(2000)) + "]" for i in range(2))
    path = _write(tmp_path, f"to: B\nnames:\n{names}\nmap:\n{refs}\n")
    with pytest.raises(CrosswalkError, match=r"cw\.yaml:3: YAML anchors and aliases"):
        read_crosswalk(path)


def test_deep_nesting_is_one_error_not_a_recursion_traceback(tmp_path):
    path = _write(tmp_path, "to: B\nmap: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(CrosswalkError, match=r"cw\.yaml:2: .*nest"):
        read_crosswalk(path)


def test_a_file_over_the_size_limit_is_refused_by_its_size(tmp_path, monkeypatch):
    import papertrack.features.crosswalk as crosswalk

    monkeypatch.setattr(crosswalk, "MAX_BYTES", 100)
    path = _write(tmp_path, "to: B\nmap:\n" + "".join(f"  Theory · X{i}: Theory · Y{i}\n" for i in range(10)))
    with pytest.raises(CrosswalkError, match=r"cw\.yaml: \d+ bytes; a crosswalk is at most 100 bytes"):
        read_crosswalk(path)


def test_a_long_chain_of_renames_is_accepted_and_its_cycle_found(tmp_path):
    """4,000 renames, each name mapped to the next (legal: one step each), then the same chain closed into a
    cycle: the check visits each name once (it used to walk the chain from every name: cubic)."""
    chain = "".join(f"  Theory · N{i}: Theory · N{i + 1}\n" for i in range(4000))
    cw = read_crosswalk(_write(tmp_path, "to: B\nmap:\n" + chain))
    assert cw.apply("Theory · N0") == (("Theory · N1", 1.0),)
    closed = chain + "  Theory · N4000: Theory · N0\n"
    with pytest.raises(CrosswalkError, match=r"the crosswalk has a cycle: Theory · N\d+ -> "):
        read_crosswalk(_write(tmp_path, "to: B\nmap:\n" + closed))


def test_the_crosswalk_matrix_is_quoted_csv_with_spreadsheet_safe_names():
    import csv
    import io
    from types import SimpleNamespace

    import numpy as np

    from papertrack.training.crosswalk_command import matrix_csv

    proposal = SimpleNamespace(
        new_names=['=HYPERLINK("x") · A', 'B, "quoted" · C'],
        old_names=["Old · X"],
        counts=np.array([[3], [1]]),
        shares=np.array([[0.5], [0.25]]),
        lift=np.array([[2.0], [1.0]]),
    )
    rows = list(csv.reader(io.StringIO(matrix_csv(proposal))))
    assert rows == [
        ["new", "old", "top1", "share", "lift"],
        ['\'=HYPERLINK("x") · A', "Old · X", "3", "0.5000", "2.00"],
        ['B, "quoted" · C', "Old · X", "1", "0.2500", "1.00"],
    ]
