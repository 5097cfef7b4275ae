"""Plain-text renderings, for terminal IPython and :func:`cuda_magic.show`."""

from __future__ import annotations

from .content import (ARGV_HINT, DRIVER_COLUMNS, OCCUPANCY_LEGEND, RESOURCE_COLUMNS, Content,
                      argv_short_text, argv_shortened, argv_text, build_columns,
                      occupancy_cell, occupancy_rows, resource_note, resource_rows,
                      split_rows, supplied_note, families_note)

__all__ = ["config", "config_of", "exact_argv", "resources", "log", "summary", "numbered"]


def table(head: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = indent + "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head).rstrip()] + [fmt.format(*r).rstrip() for r in rows]


def config(columns, argvs=(), fold_unused: bool = False) -> str:
    """Each key with its value and ``[layer]``; then the argv of each build.  ``fold_unused``:
    the flags of a compiler no build used go on one line after the table."""
    many = len(columns) > 1
    head = ["key"] + [h for label, _ in columns for h in ((label, "layer") if many else ("value", "layer"))]
    rows, notes, folded, folded_notes = split_rows(columns, fold_unused)

    def cells_of(cells):
        return [x for v, layer in cells for x in (v if v is not None else "(not set)",
                                                  f"[{layer}]" if layer else "")]
    out = table(head, [[key] + cells_of(cells) for key, cells in rows])
    compilers = " and ".join(dict.fromkeys(r["compiler"] for _, r in columns if "compiler" in r))
    out += [f"  not used (compiled with {compilers}): {key} " + " ".join(cells_of(cells)).strip()
            for key, cells in folded]
    out += [f"    {n}" for n in folded_notes] + [f"  {n}" for n in notes]
    for label, argv in argvs:
        out.append(f"argv{f' ({label})' if many else ''}: {argv_short_text(argv)}")
    if any(argv_shortened(argv) for _, argv in argvs):
        out.append(f"  ({ARGV_HINT.format('m')})")
    return "\n".join(out)


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
    head = ["kernel"] + [h for _, h in RESOURCE_COLUMNS] + \
        ([h for _, h in DRIVER_COLUMNS] if loaded else [])
    rows, notes = [], []
    for b, e, res, attrs in found:
        row = [e.name] + (["-"] * len(RESOURCE_COLUMNS) if res is None else
                          [str(getattr(res, f)) for f, _ in RESOURCE_COLUMNS])
        if loaded:
            row += [str((attrs or {}).get(f, "-")) for f, _ in DRIVER_COLUMNS]
        rows.append(row)
        if res is not None:
            notes += [f"  ! {e.name}: {w}" for w in res.warnings]
            if res.spills:
                notes.append(f"  ! {e.name} spills: {res.spill_stores} B stores, "
                             f"{res.spill_loads} B loads")
    notes += [f"  {n}" for b in {id(b): b for b, _ in entries}.values() if (n := resource_note(b))]
    return "\n".join(table(head, rows) + notes + occupancy(entries))


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
        parts.append(text.strip("\n") or "(the compiler printed nothing)")
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
    return "\n".join(out)
