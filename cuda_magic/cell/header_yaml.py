"""YAML for ``//|`` headers: :class:`HeaderLoader` (PyYAML's safe loader without anchors,
aliases, unbounded nesting or huge numbers) and :func:`load`.  Imported when a cell has a
header, so ``import cuda_magic`` does not import PyYAML (~17 ms)."""

from __future__ import annotations

import yaml

from ..errors import quote

__all__ = ["HeaderLoader", "load"]


class HeaderLoader(yaml.SafeLoader):
    """YAML for ``//|`` headers: no anchors or aliases (a few bytes of them expand to gigabytes),
    and a typed scalar that cannot be read (``!!bool maybe``) is a YAML error at its line."""

    MAX_DEPTH = 32      # nesting a header may use (a config needs 3)
    MAX_NUMBER = 64     # digits of a number (no key takes one; a long one is slow to convert)
    depth = 0

    def fetch_flow_collection_start(self, TokenClass):
        # Checked while scanning: the scanner looks ahead across every open '[' / '{' at each
        # token, so deep flow nesting is quadratic before the composer sees the first node.
        if self.flow_level >= self.MAX_DEPTH:
            raise yaml.scanner.ScannerError(None, None, f"it is nested more than {self.MAX_DEPTH} "
                                            f"deep", self.get_mark())
        super().fetch_flow_collection_start(TokenClass)

    def scan_yaml_directive_number(self, start_mark):
        # '%YAML 1.<5000 digits>': the scanner converts the version with int(), which refuses
        # strings over Python's 4300 digits with a ValueError
        length = 0
        while "0" <= self.peek(length) <= "9":
            length += 1
        if length > self.MAX_NUMBER:
            raise yaml.scanner.ScannerError("while scanning a directive", start_mark,
                                            f"a version number of {length} digits", self.get_mark())
        return super().scan_yaml_directive_number(start_mark)

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases (&name, *name) are not allowed",
                event.start_mark)
        if self.depth >= self.MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"it is nested more than {self.MAX_DEPTH} deep", event.start_mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node, deep=False):
        # YAML keys are unique: a key given twice is an error at its second place, not last-wins
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, str]] = set()
            for key, _ in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    continue
                if (key.tag, key.value) in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {quote(key.value, 60)} is given twice; give it once",
                        key.start_mark)
                seen.add((key.tag, key.value))
        return super().construct_mapping(node, deep)

    def construct_object(self, node, deep=False):
        if isinstance(node, yaml.ScalarNode) and len(node.value) > self.MAX_NUMBER and \
                node.tag.rsplit(":", 1)[-1] in ("int", "float"):
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {len(node.value)} characters is no config value",
                node.start_mark)
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, IndexError):
            tag = node.tag.rsplit(":", 1)[-1]
            what = f" {quote(node.value, 60)}" if isinstance(node, yaml.ScalarNode) else ""
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read the {tag} value{what}", node.start_mark) from None


def _load(text: str) -> tuple[object, dict[str, int]]:
    """The YAML of a header and, per top-level key (as written), the 0-based line it is on."""
    loader = HeaderLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        rows = {}
        if isinstance(node, yaml.MappingNode):
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode):
                    rows[key.value] = key.start_mark.line
        return loader.construct_document(node), rows
    finally:
        loader.dispose()


def load(text: str) -> tuple[object, dict[str, int], tuple[str, int] | None]:
    """:func:`_load`'s ``(data, rows)`` and ``None``; where the text is not YAML a header may
    hold, ``(None, {}, (problem, row))``: one line saying why and the 0-based row it is on."""
    try:
        return (*_load(text), None)
    except yaml.reader.ReaderError as exc:   # a character YAML refuses (control characters)
        char = ascii(chr(exc.character)) if isinstance(exc.character, int) else "?"
        return None, {}, (f"it holds the character {char}", text.count("\n", 0, exc.position))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return None, {}, (problem, mark.line if mark is not None else 0)
    except RecursionError:
        return None, {}, ("it is nested too deeply", 0)
