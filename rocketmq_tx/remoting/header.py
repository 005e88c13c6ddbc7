# -*- test-case-name: rocketmq_tx.remoting.test.test_header -*-
"""
Typed custom headers and the one generic codec between them and ``extFields``.

Java keeps each request's parameters in a ``CommandCustomHeader`` bean whose fields are
copied into ``extFields`` by name, every value as ``String.valueOf``: integers in
decimal, booleans ``true``/``false``, nulls left out. Here a header is a dataclass whose
fields name their wire key with :func:`wire`; :func:`custom_header` prepares the codec
once per class (a wire key is the Java field name), so encoding and decoding are a loop over a tuple.

Decoding follows Java's ``decodeCommandCustomHeader``: unknown keys are ignored, a
missing required field fails with Java's text ("the custom field <x> is null"), and a
boolean is true only for a case-insensitive ``"true"``. Where Java only logs an
unparsable number, we fail: a clear error beats a silently defaulted field.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Callable, ClassVar, Mapping, TypeVar

from rocketmq_tx.remoting.errors import RemotingCommandError

__all__ = ["wire", "custom_header", "CommandCustomHeader"]

T = TypeVar("T", bound="CommandCustomHeader")


def wire(key: str, *, required: bool = False, default: Any = None) -> Any:
    """Declare a header field travelling under ext-field *key*."""
    return dataclasses.field(default=default, metadata={"key": key, "required": required})


def _parse_bool(text: str) -> bool:
    return text.lower() == "true"


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_PARSERS: dict[type, Callable[[str], Any]] = {str: str, int: int, bool: _parse_bool, float: float}


class CommandCustomHeader:
    """Base of every typed header; see :func:`custom_header`."""

    _wire_fields: ClassVar[tuple[tuple[str, str, Callable[[str], Any], bool], ...]] = ()

    def to_ext_fields(self) -> dict[str, str]:
        """The ``extFields`` map for this header (``None`` fields left out)."""
        out: dict[str, str] = {}
        for name, key, _, _ in self._wire_fields:
            value = getattr(self, name)
            if value is not None:
                out[key] = _format_value(value)
        return out

    @classmethod
    def from_ext_fields(cls: type[T], ext: Mapping[str, str]) -> T:
        """
        Decode from an ``extFields`` map.

        :raises RemotingCommandError: a required field is missing or a value does not parse.
        """
        values: dict[str, Any] = {}
        for name, key, parse, required in cls._wire_fields:
            raw = ext.get(key)
            if raw is None:
                if required:
                    raise RemotingCommandError(f"the custom field <{key}> is null")
                continue
            try:
                values[name] = parse(raw)
            except ValueError:
                raise RemotingCommandError(
                    f"the custom field <{key}> has an invalid value {raw!r}"
                ) from None
        return cls(**values)


def custom_header(cls: type[T]) -> type[T]:
    """Class decorator: make *cls* a dataclass and precompute its wire codec."""
    cls = dataclasses.dataclass(slots=True)(cls)
    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        if "key" not in f.metadata:
            continue
        kind = hints[f.name]
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        base = args[0] if args else kind
        fields.append((f.name, f.metadata["key"], _PARSERS[base], f.metadata["required"]))
    cls._wire_fields = tuple(fields)
    return cls
