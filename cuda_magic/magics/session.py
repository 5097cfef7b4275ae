"""``%cuda_config`` as one transaction: the session's state and a parsed line in, the new state out.

:func:`apply` checks everything the line asks (the keys it unsets, its flags, the preset it
names or registers, and the session that results, completed as a cell would be) before it keeps
anything: a line that fails raises and changes nothing, neither the session nor the presets.  No
IPython shell is needed; the ``%cuda_config`` magic parses the line, calls :func:`apply`, keeps
the new state and shows it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

from IPython.core.error import UsageError

from .. import cell as _cell
from ..compile.compiler import complete
from ..config import (KEYS, LAYER_KEYS, ConfigError, check_preset, from_json, get_preset,
                      register_preset, resolve, spellings)
from ..errors import quote


@dataclass(frozen=True)
class Session:
    """The session's config: ``defaults`` (the session layer, a flat config such as
    ``{"arch": "sm_90a", "nvrtc+": ["-lineinfo"]}``) and ``preset`` (the preset layer's name)."""

    defaults: Mapping = field(default_factory=dict)
    preset: str | None = None


@dataclass(frozen=True)
class Line:
    """What one ``%cuda_config`` line asks, as parsed.

    ``options``: the config flags as written, by :func:`cuda_magic.cell.line_config`'s keywords
    (``{"arch": "sm_90a", "nvrtc_append": "-lineinfo"}``; lists are shell-split strings);
    ``unset``: keys to drop (``--unset``); ``reset``: drop every default and the preset first;
    ``preset``: ``--preset NAME``; ``register``: ``--register-preset NAME JSON`` as
    ``(name, json_text)``; ``override``: let ``register`` replace a preset registered before."""

    options: Mapping = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    reset: bool = False
    preset: str | None = None
    register: tuple[str, str] | None = None
    override: bool = False


@dataclass(frozen=True)
class Registered:
    """A ``--register-preset`` that was kept: ``old`` is the declaration it replaced (None for a
    new name or the identical declaration again), ``new`` the preset now."""

    name: str
    old: dict | None
    new: dict


@dataclass(frozen=True)
class Outcome:
    """What :func:`apply` did: ``session`` (the new state), ``registered`` (the preset the line
    registered, or None) and ``edits`` (whether the line reset, unset, set a flag or picked a
    preset: more than registering)."""

    session: Session
    registered: Registered | None = None
    edits: bool = False

    def note(self) -> str | None:
        """The line that says what ``--register-preset`` did, or None."""
        reg = self.registered
        if reg is None:
            return None
        if reg.old is None:
            return f"registered preset {reg.name!r}: {reg.new}"
        note = f"preset {reg.name!r} overridden: {_changes(reg.old, reg.new)}"
        if self.session.preset == reg.name:
            note += " (the session's preset)"
        return note


def apply(session: Session, line: Line) -> Outcome:
    """The session after ``line``, with its preset registered (the only thing kept outside the
    session), all or nothing.

    Raises, with nothing changed: :class:`~IPython.core.error.UsageError` for a flag misused
    (``--override`` without ``--register-preset``; ``--unset KEY`` of an unknown key, named);
    :class:`~cuda_magic.config.ConfigError` for a value (a flag's, ``--preset NAME``'s,
    ``--register-preset NAME``'s, named in the message; ``.key`` the config key where there is
    one), and for a resulting session that a cell could not compile with, the message ending
    ``(nothing was changed)``.  A missing arch is fine here (cells detect it or take ``--arch``).
    A line that asks nothing returns ``session`` as it is, unchecked (showing a session that
    went bad another way, e.g. ``%config CudaMagics.defaults``, still works).
    """
    if line.override and not line.register:
        raise UsageError("--override replaces a preset: use it with --register-preset NAME JSON")
    defaults, preset = dict(session.defaults), session.preset
    if line.reset:
        defaults, preset = {}, None
    for key in line.unset:
        if key not in LAYER_KEYS:
            raise UsageError(f"--unset {quote(key)}: unknown key; the keys are {', '.join(KEYS)}")
        for spelling in spellings(key):     # --unset nvrtc drops nvrtc+ too
            defaults.pop(spelling, None)
    layer = _cell.line_config(**line.options)
    for key in layer:     # the session sets a list one way: nvrtc (replace) or nvrtc+ (append)
        for spelling in spellings(key):
            defaults.pop(spelling, None)
    defaults.update(layer)
    registered = None
    if line.register:
        name, text = line.register
        try:
            registered = Registered(name, *check_preset(name, from_json(text),
                                                        override=line.override))
        except ConfigError as exc:
            message = str(exc).replace("pass override=True", "add --override")
            raise ConfigError(f"--register-preset {quote(name, 40)}: {message}", exc.key) from None
    if line.preset:
        preset = line.preset
    if preset is not None and registered and preset == registered.name:
        preset_config = registered.new
    elif preset is not None:
        try:
            preset_config = get_preset(preset)
        except ConfigError as exc:
            raise ConfigError(f"--preset {quote(preset, 40)}: {exc}") from None
    else:
        preset_config = None
    edits = bool(line.reset or line.unset or layer or line.preset)
    if edits or registered:
        try:
            _check(defaults, preset, preset_config)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (nothing was changed)", exc.key) from None
    if registered:
        register_preset(registered.name, registered.new, override=line.override)
    return Outcome(Session(defaults, preset), registered, edits)


def resolved_json(session: Session) -> str:
    """``%cuda_config --json``: the config a cell with no options would get, as canonical JSON
    (``{"cuda": {...}}``; an arch list as the list the layer gave)."""
    resolved = _cell.session_config(dict(session.defaults), session.preset)
    config = resolved.config
    if len(resolved.archs) > 1:
        config["arch"] = list(resolved.archs)
    return json.dumps({"cuda": config}, sort_keys=True, separators=(",", ":"))


def _check(defaults: dict, preset: str | None, preset_config: dict | None) -> None:
    """Resolve and complete the session as a cell with no options would (a missing arch with no
    GPU to detect one is fine here); raise the first error."""
    layers = [(f"preset:{preset}", preset_config)] if preset else []
    resolved = resolve(*layers, ("session", defaults))
    try:
        complete(resolved)
    except ConfigError as exc:
        if exc.key != "arch" or "arch" in resolved:
            raise


def _changes(old: dict, new: dict) -> str:
    """``arch 'sm_80' -> 'sm_89', ptxas (unset) -> ['-v']``."""
    def shown(cfg, key):
        return repr(cfg[key]) if key in cfg else "(unset)"
    return ", ".join(f"{key} {shown(old, key)} -> {shown(new, key)}"
                     for key in LAYER_KEYS if old.get(key) != new.get(key))
