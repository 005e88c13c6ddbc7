"""The construct declarations and the precompiled structs describe the same bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.sysflag import BLANK_MAGIC_CODE
from rocketmq_tx.store import formats as F

i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)


class FormatTests(SynchronousTestCase):
    @settings(max_examples=50, deadline=None)
    @given(i64, i32, i64)
    def test_cq_entry(self, offset: int, size: int, tags: int) -> None:
        raw = F.CQ_ENTRY.pack(offset, size, tags)
        self.assertEqual(len(raw), F.CQ_STORE_UNIT_SIZE)
        self.assertEqual(F.ConsumeQueueEntry.build(dict(commit_log_offset=offset, size=size, tags_code=tags)), raw)
        c = F.ConsumeQueueEntry.parse(raw)
        self.assertEqual((c.commit_log_offset, c.size, c.tags_code), (offset, size, tags))

    @settings(max_examples=50, deadline=None)
    @given(i64, i64, i64, i64, i32, i32)
    def test_index_header(self, a: int, b: int, c: int, d: int, e: int, f: int) -> None:
        raw = F.INDEX_HEADER.pack(a, b, c, d, e, f)
        self.assertEqual(len(raw), F.INDEX_HEADER_SIZE)
        built = F.IndexHeader.build(dict(begin_timestamp=a, end_timestamp=b, begin_phy_offset=c,
                                         end_phy_offset=d, hash_slot_count=e, index_count=f))
        self.assertEqual(built, raw)

    @settings(max_examples=50, deadline=None)
    @given(i32, i64, i32, i32)
    def test_index_entry_and_slot(self, h: int, phy: int, diff: int, prev: int) -> None:
        raw = F.INDEX_ENTRY.pack(h, phy, diff, prev)
        self.assertEqual(len(raw), F.INDEX_ENTRY_SIZE)
        self.assertEqual(F.IndexEntry.build(dict(key_hash=h, phy_offset=phy, time_diff=diff, prev_index=prev)), raw)
        self.assertEqual(F.IndexSlot.build(dict(index=h)), F.INDEX_SLOT.pack(h))
        self.assertEqual(F.INDEX_SLOT.size, F.INDEX_HASH_SLOT_SIZE)

    @settings(max_examples=50, deadline=None)
    @given(i64, i64, i64, i64, i64)
    def test_checkpoint(self, a: int, b: int, c: int, d: int, e: int) -> None:
        raw = F.StoreCheckpointLayout.build(dict(physic_msg_timestamp=a, logics_msg_timestamp=b,
                                                 index_msg_timestamp=c, master_flushed_offset=d,
                                                 confirm_phy_offset=e))
        self.assertEqual(len(raw), F.CHECKPOINT_FILE_SIZE)
        self.assertEqual(raw[: F.CHECKPOINT.size], F.CHECKPOINT.pack(a, b, c, d, e))

    @given(st.integers(8, 2**31 - 1))
    def test_blank(self, size: int) -> None:
        raw = F.BLANK_HEAD.pack(size, BLANK_MAGIC_CODE)
        self.assertEqual(F.BlankRecordHead.build(dict(total_size=size)), raw)
        self.assertEqual(raw[4:], bytes.fromhex("CBD43194"))

    def test_file_name(self) -> None:
        self.assertEqual(F.file_name(0), "00000000000000000000")
        self.assertEqual(F.file_name(1073741824), "00000000001073741824")
