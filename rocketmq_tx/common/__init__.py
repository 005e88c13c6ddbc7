"""
Runtime-neutral domain values shared by the store, the remoting codec and the clients.

Standard library only (plus ``construct`` in :mod:`~rocketmq_tx.common.formats`, which is not
imported here); nothing in this package may import Twisted or the networking layers.

* :mod:`~rocketmq_tx.common.message`: :class:`Message`, :class:`MessageExt`,
  :class:`MessageQueue`, property names and the properties string codec.
* :mod:`~rocketmq_tx.common.messagecodec`: the fast CommitLog-record and batch codecs.
* :mod:`~rocketmq_tx.common.msgid`: offset message ids and unique keys.
* :mod:`~rocketmq_tx.common.sysflag`: magic codes and ``sysFlag`` bits.
* :mod:`~rocketmq_tx.common.formats`: the same formats declared with ``construct``.
"""

from rocketmq_tx.common.errors import MessageFormatError, RocketMQError, UnsupportedCompressionError
from rocketmq_tx.common.message import (
    KEY_SEPARATOR,
    Message,
    MessageConst,
    MessageExt,
    MessageQueue,
    properties_to_string,
    string_to_properties,
)
from rocketmq_tx.common.messagecodec import (
    decode_batch,
    decode_message,
    decode_messages,
    encode_batch,
    encode_message,
    java_string_hash,
    tags_code,
)
from rocketmq_tx.common.msgid import (
    UniqueKeyGenerator,
    create_offset_msg_id,
    decode_offset_msg_id,
)
from rocketmq_tx.common.sysflag import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MessageSysFlag,
)

__all__ = [
    "RocketMQError",
    "MessageFormatError",
    "UnsupportedCompressionError",
    "KEY_SEPARATOR",
    "MessageConst",
    "Message",
    "MessageExt",
    "MessageQueue",
    "properties_to_string",
    "string_to_properties",
    "encode_message",
    "decode_message",
    "decode_messages",
    "encode_batch",
    "decode_batch",
    "java_string_hash",
    "tags_code",
    "UniqueKeyGenerator",
    "create_offset_msg_id",
    "decode_offset_msg_id",
    "MessageSysFlag",
    "MESSAGE_MAGIC_CODE",
    "MESSAGE_MAGIC_CODE_V2",
    "BLANK_MAGIC_CODE",
]
