"""Hypothesis strategies for remoting values (test helpers; imports hypothesis)."""

from __future__ import annotations

from hypothesis import strategies as st

from rocketmq_tx.remoting import RemotingCommand, SerializeType

__all__ = ["commands", "int16", "int32"]

int16 = st.integers(-0x8000, 0x7FFF)
int32 = st.integers(-0x80000000, 0x7FFFFFFF)
_text = st.text(min_size=1, max_size=40)


@st.composite
def commands(draw: st.DrawFn, serialize_type: SerializeType | None = None, max_body: int = 2048) -> RemotingCommand:
    """Any command both header encodings carry unchanged (non-empty strings: the binary
    form reads an empty string as absent)."""
    kind = draw(st.sampled_from(list(SerializeType))) if serialize_type is None else serialize_type
    return RemotingCommand(
        code=draw(int16),
        language=draw(st.integers(0, 255)),
        version=draw(int16),
        opaque=draw(int32),
        flag=draw(st.integers(0, 3)),
        remark=draw(st.none() | _text),
        ext_fields=draw(st.dictionaries(_text, _text, max_size=8)),
        body=draw(st.binary(max_size=max_body)),
        serialize_type=kind,
    )
