"""Plain-text renderings, for terminal IPython and :func:`cuda_magic.show`."""

from __future__ import annotations

import re
import textwrap

from .content import (ARGV_HINT, DRIVER_COLUMNS, OCCUPANCY_LEGEND, RESOURCE_COLUMNS, Content,
                      argv_short_text, argv_shortened, argv_text, build_columns,
                      occupancy_cell, occupancy_rows, resource_note, resource_rows,
                      split_rows, supplied_note, families_note, names_lines, short_paths)

__all__ = ["config", "config_of", "exact_argv", "resources", "log", "summary", "numbered"]


def table(head: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Left-aligned columns two spaces apart, one where two would pass :data:`WIDTH`."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    gap = "  " if len(indent) + sum(widths) + 2 * (len(widths) - 1) <= WIDTH else " "
    fmt = indent + gap.join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head).rstrip()] + [fmt.format(*r).rstrip() for r in rows]


WIDTH = 100     # columns a plain-text view fits (a long word, a path, may still pass it)


def config(columns, argvs=(), fold_unused: bool = False) -> str:
    """Each key with its value and ``[layer]``; then the argv of each build.  ``fold_unused``:
    the flags of a compiler no build used go on one line after the table.  Within
    :data:`WIDTH` columns: builds side by side when they fit, else one block per build, builds
    that differ only in their arch as one (their argvs too)."""
    many = len(columns) > 1
    rows, notes, folded, folded_notes = split_rows(columns, fold_unused)

    def cells_of(cells):
        return [x for v, layer in cells for x in (v if v is not None else "(not set)",
                                                  f"[{layer}]" if layer else "")]
    head = ["key"] + [h for label, _ in columns for h in ((label, "layer") if many else ("value", "layer"))]
    out = table(head, [[key] + cells_of(cells) for key, cells in rows])
    if max(map(len, out)) > WIDTH:
        out = []
        for label, at in _by_arch([label for label, _ in columns], rows):
            out.append(f"  {label}:")
            out += table(["key", "value", "layer"],
                         [[key] + cells_of([cells[at[0]]]) if key != "arch" else
                          [key] + cells_of([(", ".join(cells[i][0] for i in at), cells[at[0]][1])])
                          for key, cells in rows], indent="    ")[1:]
    compilers = " and ".join(dict.fromkeys(r["compiler"] for _, r in columns if "compiler" in r))
    unused = [f"{key} " + " ".join(" ".join(cells_of([c])).strip() for c in dict.fromkeys(cells))
              for key, cells in folded]        # each (value, layer) once
    out += [f"  not used (compiled with {compilers}): " + "; ".join(unused)] if unused else []
    out += [f"    {n}" for n in folded_notes] + [f"  {n}" for n in notes]
    for label, argv in _argvs(argvs):
        out.append(f"argv{f' ({label})' if many else ''}: {argv}")
    if any(argv_shortened(argv) for _, argv in argvs):
        out.append(f"  ({ARGV_HINT.format('m')})")
        out += [f"  {d}" for d in names_lines([argv for _, argv in argvs])]
    return "\n".join(fit(out))


def _by_arch(labels, rows):
    """[(label, column indexes)]: the builds whose rows are equal but for the arch, as one."""
    groups: dict = {}
    for i, label in enumerate(labels):
        same = tuple((key, cells[i]) for key, cells in rows if key != "arch")
        groups.setdefault(same, []).append(i)
    return [(labels[at[0]] if len(at) == 1 else
             f"{_stem(labels[at[0]])} ({len(at)} builds, one per arch)", at)
            for at in groups.values()]


def _stem(label: str) -> str:
    return label.rsplit(" (", 1)[0] if label.endswith(")") else label


_ARCH_FLAG = re.compile(r"^(--gpu-architecture=|-arch=|-gencode=|--generate-code=)\S+$")


def _argvs(argvs):
    """(label, short argv text): builds whose short argvs differ only in the arch flag as one
    line, the flag written ``--gpu-architecture=<arch>`` (``show(m, "argv")`` has each exactly)."""
    groups: dict = {}
    for label, argv in argvs:
        key = argv_short_text(tuple(_ARCH_FLAG.sub(r"\1@ARCH@", a) for a in argv))
        groups.setdefault(key, []).append((label, argv))
    out = []
    for key, members in groups.items():
        if len(members) == 1:
            out.append((members[0][0], argv_short_text(members[0][1])))
        else:
            archs = ", ".join(label.rsplit(" (", 1)[-1].rstrip(")") for label, _ in members)
            out.append((f"{_stem(members[0][0])}: {archs}", key.replace("@ARCH@", "<arch>")))
    return out


def fit(lines, width: int = WIDTH) -> list[str]:
    """Lines longer than ``width`` broken between words, the rest of each indented under it."""
    out = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        lead = " " * (len(line) - len(line.lstrip()) + 4)
        out += textwrap.wrap(line, width, subsequent_indent=lead, break_long_words=False,
                             break_on_hyphens=False)
    return out


def exact_argv(argvs) -> str:
    """Each build's argv exactly as it ran (``show(m, "argv")``), one per line."""
    many = len(argvs) > 1
    return "\n".join(f"{f'{label}: ' if many else ''}{argv_text(argv)}" for label, argv in argvs)


def config_of(c: Content) -> str:
    return config(build_columns(c), [(b.label, b.result.argv) for b in c.builds], fold_unused=True)


def resources(c: Content, kernel: str | None = None) -> str:
    entries = [(b, e) for b, e in c.entries if kernel in (None, e.name, e.symbol)]
    if not entries:
        return f"no kernel {kernel!r}" if kernel else "no kernels in this cell"
    loaded, found = resource_rows(entries)
    head = ["kernel"] + [h for _, h in RESOURCE_COLUMNS]
    rows, driver, notes = [], [], []
    for b, e, res, attrs in found:
        rows.append([e.name] + (["-"] * len(RESOURCE_COLUMNS) if res is None else
                                [str(getattr(res, f)) for f, _ in RESOURCE_COLUMNS]))
        driver.append([str((attrs or {}).get(f, "-")) for f, _ in DRIVER_COLUMNS])
        if res is not None:
            notes += [f"  ! {e.name}: {w}" for w in res.warnings]
            if res.spills:
                notes.append(f"  ! {e.name} spills: {res.spill_stores} B stores, "
                             f"{res.spill_loads} B loads")
    notes += [f"  {n}" for b in {id(b): b for b, _ in entries}.values() if (n := resource_note(b))]
    drivers = [h for _, h in DRIVER_COLUMNS]
    lines = table(head + drivers, [r + d for r, d in zip(rows, driver)]) if loaded else []
    if not lines or max(map(len, lines)) > WIDTH:   # too wide: the driver's figures below
        lines = table(head, rows) + (["  driver:"] + table(
            ["kernel"] + drivers, [[r[0]] + d for r, d in zip(rows, driver)], indent="    ")
            if loaded else [])
    return "\n".join(lines + notes + occupancy(entries))


def occupancy(entries) -> list[str]:
    """Blocks per SM · occupancy · limiter per block size, per kernel; the driver's blocks per
    SM beside when loaded."""
    found = occupancy_rows(entries)
    if not found:
        return []
    archs = ", ".join(dict.fromkeys(b.result.arch for b, _, _ in found))
    head = ["kernel"] + [f"{o.block}" for o in found[0][2]]
    rows = []
    for _, e, occ in found:
        rows.append([e.name] + [occupancy_cell(o) for o in occ])
        if any(o.driver is not None for o in occ):
            rows.append(["  driver"] + [f"{o.driver}" + ("" if o.driver == o.blocks else " (!)")
                                        for o in occ])
    return [f"occupancy per block size ({archs}; blocks/SM · occupancy · limiter: "
            f"{OCCUPANCY_LEGEND}):"] + table(head, rows)


def log(c: Content) -> str:
    parts = []
    for b in c.builds:
        if len(c.builds) > 1:
            parts.append(f"-- {b.label} --")
        parts += [supplied_note(b.result.supplied_headers)] if b.result.supplied_headers else []
        parts += [n for n in [families_note(b.result.compiler)] if n]
        text, left_out = c.log(b)
        parts += [left_out] if left_out else []
        parts.append(short_paths(text, b.result.argv).strip("\n") or "(the compiler printed nothing)")
    return "\n".join(parts)


def numbered(source: str) -> str:
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


def summary(c: Content) -> str:
    """What terminal IPython shows for a compiled cell."""
    out = [c.header()]
    out += [f"! {w}" for w in c.warnings()]
    out += [config_of(c), resources(c)]
    out += list(c.notes)
    return "\n".join(fit("\n".join(out).split("\n")))
