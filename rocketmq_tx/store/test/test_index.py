"""IndexFile layout and IndexService lookups."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from rocketmq_tx.common.messagecodec import java_string_hash
from rocketmq_tx.store.formats import INDEX_ENTRY, INDEX_HEADER, INDEX_SLOT
from rocketmq_tx.store.index import IndexFile, IndexService, index_key_hash
from rocketmq_tx.store.test.util import Clock, message, open_store, temp_root


class IndexFileTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.dir = temp_root(self)
        os.makedirs(self.dir)

    def test_layout(self) -> None:
        f = IndexFile(os.path.join(self.dir, "20260101120000000"), 10, 40)
        self.addCleanup(f.close)
        self.assertEqual(os.path.getsize(f.path), 40 + 10 * 4 + 40 * 20)
        self.assertTrue(f.put_key("T#a", 100, 1_000_000))
        self.assertTrue(f.put_key("T#b", 200, 1_005_500))
        self.assertTrue(f.put_key("T#a", 300, 1_010_000))
        with open(f.path, "rb") as fh:
            raw = fh.read()
        self.assertEqual(INDEX_HEADER.unpack_from(raw, 0), (1_000_000, 1_010_000, 100, 300, 2, 4))
        h = index_key_hash("T#a")
        slot = INDEX_SLOT.unpack_from(raw, 40 + (h % 10) * 4)[0]
        self.assertEqual(slot, 3)
        base = 40 + 10 * 4
        self.assertEqual(INDEX_ENTRY.unpack_from(raw, base + 3 * 20), (h, 300, 10, 1))
        self.assertEqual(INDEX_ENTRY.unpack_from(raw, base + 1 * 20), (h, 100, 0, 0))
        self.assertEqual(INDEX_ENTRY.unpack_from(raw, base + 2 * 20)[2], 5)  # seconds, truncated
        self.assertEqual(raw[base: base + 20], bytes(20))  # index 0 is never used
        out: list[int] = []
        f.select_phy_offset(out, "T#a", 32, 0, 2_000_000)
        self.assertEqual(out, [300, 100])
        out = []
        f.select_phy_offset(out, "T#a", 32, 1_005_000, 2_000_000)
        self.assertEqual(out, [300])

    def test_full(self) -> None:
        f = IndexFile(os.path.join(self.dir, "20260101120000000"), 4, 3)
        self.addCleanup(f.close)
        self.assertTrue(f.put_key("a", 1, 1))
        self.assertTrue(f.put_key("b", 2, 1))
        self.assertFalse(f.put_key("c", 3, 1))

    @given(st.text(max_size=20))
    def test_hash(self, key: str) -> None:
        h = index_key_hash(key)
        self.assertGreaterEqual(h, 0)
        self.assertEqual(h, abs(java_string_hash(key)) if java_string_hash(key) != -(2**31) else 0)

    @given(st.text(max_size=80))
    def test_fast_hash(self, key: str) -> None:
        from rocketmq_tx.store.index import fast_string_hash
        self.assertEqual(fast_string_hash(key), java_string_hash(key) & 0xFFFFFFFF)

    @given(st.text(max_size=20), st.text(max_size=40))
    def test_topic_key_hash(self, topic: str, key: str) -> None:
        from rocketmq_tx.store.index import topic_key_hash
        self.assertEqual(topic_key_hash(topic, key), index_key_hash(f"{topic}#{key}"))

    def test_min_int_hash(self) -> None:
        # "polygenelubricants".hashCode() == Integer.MIN_VALUE
        self.assertEqual(java_string_hash("polygenelubricants"), -(2**31))
        self.assertEqual(index_key_hash("polygenelubricants"), 0)


class IndexServiceTests(SynchronousTestCase):
    def test_rolls_to_new_files(self) -> None:
        clock = Clock()
        root = temp_root(self)
        s = open_store(root, clock, max_hash_slot_num=8, max_index_num=10)
        for i in range(30):
            s.put_message(message(keys=f"k{i % 5}", uniq=f"U{i}", body=b"%d" % i))
            clock.advance(1)
        self.assertGreater(len(os.listdir(os.path.join(root, "index"))), 3)
        q = s.query_message("TopicTest", "k2", 32, 0, int(clock() * 1000))
        self.assertEqual(len(q.message_buffers), 6)
        q = s.query_message("TopicTest", "k2", 2, 0, int(clock() * 1000))
        self.assertEqual(len(q.message_buffers), 2)
        s.shutdown()
        s = open_store(root, clock, max_hash_slot_num=8, max_index_num=10)
        q = s.query_message("TopicTest", "U29", 32, 0, int(clock() * 1000))
        self.assertEqual(len(q.message_buffers), 1)
        s.shutdown()

    def test_file_names(self) -> None:
        import re
        root = temp_root(self)
        s = open_store(root)
        s.put_message(message(keys="a"))
        [name] = os.listdir(os.path.join(root, "index"))
        self.assertTrue(re.fullmatch(r"\d{17}", name))
        s.shutdown()

    def test_stopped_clock_names(self) -> None:
        """Files rolled within one millisecond take the next free names, in order."""
        service = IndexService(temp_root(self), 4, 2, lambda: 1_700_000_000_000)  # one key per file
        for i in range(5):
            service.build_index("T", 100 * i, 1_700_000_000_000, 0, f"k{i}", None)
        names = [os.path.basename(f.path) for f in service.files]
        self.assertEqual(names, sorted(set(names)))
        self.assertEqual(len(names), 5)
        self.assertEqual(int(names[-1]) - int(names[0]), 4)


_ = (IndexService, settings)


class IndexTagsTests(SynchronousTestCase):
    def test_index_tags_like_5x(self) -> None:
        clock = Clock()
        s = open_store(temp_root(self), clock, index_tags=True)
        s.put_message(message(tags="TagA", keys="k", uniq="U"))
        f = s.index_service.files[-1]
        self.assertEqual(f.index_count, 4)  # UNIQ_KEY, KEYS, TAGS
        q = s.query_message("TopicTest", "T#TagA", 32, 0, int(clock() * 1000))
        self.assertEqual(len(q.message_buffers), 1)
        s.shutdown()
