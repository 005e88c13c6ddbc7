# -*- test-case-name: rocketmq_tx.store.test.test_formats -*-
"""
The store's own on-disk layouts, declared once with ``construct`` (the specification, also
used by tools and tests), next to the precompiled :class:`struct.Struct` objects the hot
paths use. ``test_formats`` checks with Hypothesis that both agree.

CommitLog records themselves are :mod:`rocketmq_tx.common.formats` / ``messagecodec``.
All integers are big-endian, as Java's ``ByteBuffer``.
"""

from __future__ import annotations

import struct
from typing import Final

from construct import Const, Int32sb, Int64sb, Padding, Struct

from rocketmq_tx.common.sysflag import BLANK_MAGIC_CODE

__all__ = [
    "CQ_STORE_UNIT_SIZE",
    "ConsumeQueueEntry",
    "CQ_ENTRY",
    "INDEX_HEADER_SIZE",
    "INDEX_HASH_SLOT_SIZE",
    "INDEX_ENTRY_SIZE",
    "IndexHeader",
    "IndexSlot",
    "IndexEntry",
    "INDEX_HEADER",
    "INDEX_SLOT",
    "INDEX_ENTRY",
    "CHECKPOINT_FILE_SIZE",
    "StoreCheckpointLayout",
    "CHECKPOINT",
    "BlankRecordHead",
    "BLANK_HEAD",
    "END_FILE_MIN_BLANK_LENGTH",
    "file_name",
]

#: ConsumeQueue entry (Java ``ConsumeQueue.CQ_STORE_UNIT_SIZE``).
CQ_STORE_UNIT_SIZE: Final = 20

#: commitLogOffset, size (the record's TOTALSIZE), tagsCode.
ConsumeQueueEntry = Struct(
    "commit_log_offset" / Int64sb,
    "size" / Int32sb,
    "tags_code" / Int64sb,
)
CQ_ENTRY: Final = struct.Struct(">qiq")

INDEX_HEADER_SIZE: Final = 40
INDEX_HASH_SLOT_SIZE: Final = 4
INDEX_ENTRY_SIZE: Final = 20

#: Java ``IndexHeader``.
IndexHeader = Struct(
    "begin_timestamp" / Int64sb,
    "end_timestamp" / Int64sb,
    "begin_phy_offset" / Int64sb,
    "end_phy_offset" / Int64sb,
    "hash_slot_count" / Int32sb,
    "index_count" / Int32sb,
)
INDEX_HEADER: Final = struct.Struct(">qqqqii")

#: One hash slot: the index number of the newest entry of the bucket (0 = empty).
IndexSlot = Struct("index" / Int32sb)
INDEX_SLOT: Final = struct.Struct(">i")

#: One index entry (Java ``IndexFile.putKey``).
IndexEntry = Struct(
    "key_hash" / Int32sb,
    "phy_offset" / Int64sb,
    "time_diff" / Int32sb,
    "prev_index" / Int32sb,
)
INDEX_ENTRY: Final = struct.Struct(">iqii")

#: Java ``StoreCheckpoint`` maps one OS page.
CHECKPOINT_FILE_SIZE: Final = 4096

#: The used head of the checkpoint file; 4.9 uses the first 24 bytes, 5.x the first 40.
StoreCheckpointLayout = Struct(
    "physic_msg_timestamp" / Int64sb,
    "logics_msg_timestamp" / Int64sb,
    "index_msg_timestamp" / Int64sb,
    "master_flushed_offset" / Int64sb,
    "confirm_phy_offset" / Int64sb,
    Padding(CHECKPOINT_FILE_SIZE - 40),
)
CHECKPOINT: Final = struct.Struct(">qqqqq")

#: The filler that ends a CommitLog file: the bytes left in the file, then BLANK_MAGIC_CODE.
BlankRecordHead = Struct(
    "total_size" / Int32sb,
    "magic" / Const(BLANK_MAGIC_CODE, Int32sb),
)
BLANK_HEAD: Final = struct.Struct(">ii")
#: Java ``CommitLog.END_FILE_MIN_BLANK_LENGTH``: a record must leave room for the filler.
END_FILE_MIN_BLANK_LENGTH: Final = 8


def file_name(offset: int) -> str:
    """Java ``UtilAll.offset2FileName``: 20 decimal digits, zero-padded."""
    return f"{offset:020d}"
