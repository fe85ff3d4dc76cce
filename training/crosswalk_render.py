"""A crosswalk proposal (:mod:`papertrack.training.crosswalk_proposal`) written out as a crosswalk file to review by
hand: a header of comments (how it was made, the honesty note, flagged names), then one commented entry per
mapped old name."""

from __future__ import annotations

from papertrack.features.labels import format_label, normalise_label
from papertrack.training.crosswalk_proposal import (
    MIN_LIFT,
    MIN_TARGET_SHARE,
    NAME_MIN_LIFT,
    NO_ANALOG,
    NewName,
    Proposal,
)

HONESTY_NOTE = (
    "made from {target}'s own labels: do NOT score a temporal holdout of those same {target} papers with a model "
    "trained through it (the crosswalk has seen their answers); check it by hand, or propose it from other papers"
)


def render(proposal: Proposal, command: str = "") -> str:
    """The proposal as a crosswalk file :func:`papertrack.features.crosswalk.read_crosswalk` reads: a header of
    comments (how it was made, the honesty note, flagged names, unmapped old names), then ``from``/``to``/``map``
    with one commented entry per mapped old name. Old names that keep their name have no entry."""
    source = " + ".join(proposal.sources)
    target = proposal.target
    lines = [
        "# papertrack crosswalk: edit it, then pass it to papertrack train --crosswalk FILE",
        f"# Proposed from the papers{f' by `{command}`' if command else ''}: a {proposal.candidate} model of "
        f"{source}'s names ({int(proposal.old_papers.sum()):,} papers, seed {proposal.seed})",
        f"# predicted {target}'s {int(proposal.new_papers.sum()):,} labeled papers; each old name maps to the new "
        "names whose papers look like it",
        f"# (shares: its probability mass among them; thresholds: lift >= {MIN_LIFT:g}, same subarea lift >= "
        f"{NAME_MIN_LIFT:g}, share >= {MIN_TARGET_SHARE:g}).",
        "# HONESTY: " + HONESTY_NOTE.format(target=target) + ".",
        "# Beside each entry: the new name's relation (rename, merge, split) and the evidence (lift, or same subarea).",
    ]
    s = proposal.summary()
    lines.append(
        f"# Found: {s['renames']} renames, {s['merges']} merges, {s['splits']} splits, {s['no_analog']} new names "
        f"with no old analog, {s['same_name']} names kept (no entry needed), {s['unmapped_old']} old names unmapped."
    )
    flagged = [n for n in proposal.names if n.relation == NO_ANALOG]
    if flagged:
        lines.append("#")
        lines.append(
            f"# NEW NAMES WITH NO OLD ANALOG ({len(flagged)}): no old name maps to them; only their own papers "
            "teach them. Their papers fall into:"
        )
        for n in flagged:
            lines.append(f"#   {n.name} ({n.papers} papers): {_falls(n)}")
    unmapped = proposal.unmapped
    if unmapped:
        lines.append("#")
        lines.append(
            f"# OLD NAMES NO NEW PAPERS FELL INTO ({len(unmapped)}): no new name's papers look like them "
            f"(lift < {MIN_LIFT:g}); unmapped, their papers teach their area (or follow an area line)."
        )
        lines.append("# The lines below are suggestions (the best lift): move one into 'map' only if it is right.")
        areas = proposal.area_lines()
        for e in unmapped:
            area, sub = normalise_label(e.old, warn=False)
            follows = f"; the area line maps it to {format_label(areas[area], sub)!r}" if area in areas else ""
            lines.append(
                f"#   {_scalar(e.old)}: {_scalar(e.suggestion)}    # lift {e.suggestion_lift:.1f}, "
                f"{e.old_papers} old papers{follows}"
            )
    lines += [f"from: {_scalar(source)}", f"to: {_scalar(target)}", "map:"]
    by_target = {n.name: n for n in proposal.names}
    areas = proposal.area_lines()
    for e in proposal.mapped:
        if e.is_split:
            lines.append(f"  # split: {e.old_papers} old papers; {e.top1} new papers' top-1 answer")
            lines.append(f"  {_scalar(e.old)}:")
            lines += [f"    {_scalar(new)}: {share:.2f}    # {by_target[new].relation}" for new, share in e.targets]
        else:
            ((new, _),) = e.targets
            why = (
                "same subarea"
                if e.by_name
                else f"lift {proposal.lift[proposal.new_names.index(new), proposal.old_names.index(e.old)]:.1f}"
            )
            if e.old in areas:
                why += f"; an area line: every {e.old} · X without an entry becomes {new} · X"
            lines.append(f"  {_scalar(e.old)}: {_scalar(new)}    # {by_target[new].relation} ({why})")
    if not proposal.mapped:
        lines.append("  {}")
    return "\n".join(lines) + "\n"


def _falls(n: NewName) -> str:
    return ", ".join(f"{old} {share:.0%} ({count} top-1)" for old, share, count in n.falls_into)


def _scalar(text: str) -> str:
    """``text`` as one YAML scalar (quoted only when it must be)."""
    import yaml

    return yaml.safe_dump(text, default_style=None, allow_unicode=True, width=10_000).strip().removesuffix("\n...")
