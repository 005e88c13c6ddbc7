"""Timer store byte layouts against vectors derived from Java 5.3.3's ByteBuffer writes."""

from __future__ import annotations

import json
import os

from twisted.trial.unittest import TestCase

from rocketmq_tx.store.test.util import temp_root
from rocketmq_tx.store.timer.checkpoint import TimerCheckpoint
from rocketmq_tx.store.timer.formats import (
    BLANK_MAGIC_CODE,
    MAGIC_DEFAULT,
    UNIT_SIZE,
    CheckpointData,
    TimerUnit,
    is_magic_ok,
)
from rocketmq_tx.store.timer.metrics import TimerMetrics
from rocketmq_tx.store.timer.timerlog import TimerLog
from rocketmq_tx.store.timer.wheel import IGNORE, TimerWheel


class UnitTests(TestCase):
    def test_unit_bytes(self) -> None:
        """A unit is Java doEnqueue's putInt/putLong sequence, big-endian, 52 bytes."""
        unit = TimerUnit(prev_pos=-1, magic=MAGIC_DEFAULT, curr_write_time_ms=0x0102030405060708,
                         delayed_time=1000, offset_py=0x1122, size_py=0x33, hash_topic=-2)
        expected = bytes.fromhex(
            "00000034"            # size 52
            "ffffffffffffffff"    # prev pos -1
            "00000001"            # magic
            "0102030405060708"    # curr write time
            "000003e8"            # delayed time 1000
            "0000000000001122"    # offsetPy
            "00000033"            # sizePy
            "fffffffe"            # topic hash -2
            "0000000000000000")   # reserved
        self.assertEqual(unit.encode(), expected)
        self.assertEqual(UNIT_SIZE, 52)
        self.assertEqual(TimerUnit.decode(expected), (52, unit))
        self.assertEqual(unit.deliver_time_ms, 0x0102030405060708 + 1000)

    def test_blank_magic(self) -> None:
        """Java ``0xBBCCDDEE ^ 1880681586 + 8`` is 0xCBD43194 (the + binds first)."""
        self.assertEqual(BLANK_MAGIC_CODE & 0xFFFFFFFF, 0xCBD43194)
        self.assertTrue(is_magic_ok(7))
        self.assertFalse(is_magic_ok(16))
        self.assertFalse(is_magic_ok(BLANK_MAGIC_CODE))

    def test_checkpoint_bytes(self) -> None:
        """TimerCheckpoint.encode: seven longs; decode also takes the old 32-byte form."""
        cp = CheckpointData(1, 2, 3, 4, 5, 6, 7)
        data = cp.encode()
        self.assertEqual(data, b"".join(i.to_bytes(8, "big") for i in range(1, 8)))
        self.assertEqual(CheckpointData.decode(data), cp)
        self.assertEqual(CheckpointData.decode(data[:32]), CheckpointData(1, 2, 3, 4))


class FileTests(TestCase):
    def setUp(self) -> None:
        self.root = temp_root(self)
        os.makedirs(self.root)

    def test_timerlog_blank_at_file_end(self) -> None:
        """A unit that would leave less than 16 bytes free closes the file with a blank and rolls over."""
        size = 52 * 3 + 20  # two units fit with a blank after them, the third does not
        log = TimerLog(os.path.join(self.root, "timerlog"), size)
        self.assertTrue(log.load())
        unit = TimerUnit(-1, 1, 0, 0, 0, 0, 0).encode()
        self.assertEqual([log.append(unit) for _ in range(4)], [0, 52, 104, size])
        first = log.mapped_file_queue.files[0]
        self.assertEqual(first.mm[156:172], (20).to_bytes(4, "big") + bytes(8) + BLANK_MAGIC_CODE.to_bytes(
            4, "big", signed=True))
        self.assertEqual(sorted(os.listdir(os.path.join(self.root, "timerlog"))),
                         ["00000000000000000000", "00000000000000000176"])
        self.assertEqual(log.offset_for_last_unit(), size - (size - 16) % 52 - 16 - 52)
        log.shutdown()

    def test_wheel_slots(self) -> None:
        """The wheel file is 2 * slots * 32 bytes; a slot stores time / precision and is another round's otherwise."""
        path = os.path.join(self.root, "timerwheel")
        wheel = TimerWheel(path, 100, 1000)
        self.assertEqual(os.path.getsize(path), 6400)
        t = 1_767_268_803_000
        wheel.put_slot(t, 52, 104, 2, 0)
        index = t // 1000 % 200
        self.assertEqual(wheel.mm[index * 32:index * 32 + 32], bytes.fromhex(
            "00000000695661c3" "0000000000000034" "0000000000000068" "00000002" "00000000"))
        self.assertEqual(wheel.get_slot(t + 999).last_pos, 104)
        self.assertEqual(wheel.get_slot(t + 200_000).time_ms, -1)  # same index, next round
        wheel.revise_slot(t, IGNORE, 156, True)
        self.assertEqual((wheel.get_slot(t).first_pos, wheel.get_slot(t).last_pos, wheel.get_slot(t).num),
                         (52, 156, 2))
        wheel.revise_slot(t + 1000, IGNORE, 208, True)  # a new slot: first = last
        self.assertEqual(wheel.get_slot(t + 1000).first_pos, 208)
        self.assertEqual(wheel.get_all_num(t), 2)
        self.assertEqual(wheel.check_phy_pos(t, 150), 52)
        wheel.shutdown()
        with self.assertRaises(ValueError):
            TimerWheel(path, 50, 1000)

    def test_checkpoint_file(self) -> None:
        """timercheck: a 4096-byte file read back as written."""
        path = os.path.join(self.root, "config", "timercheck")
        cp = TimerCheckpoint(path)
        cp.data = CheckpointData(10, 20, 30, 40, 0, 50, 3)
        cp.shutdown()
        self.assertEqual(os.path.getsize(path), 4096)
        self.assertEqual(TimerCheckpoint(path).data, CheckpointData(10, 20, 30, 40, 0, 50, 3))

    def test_metrics_json(self) -> None:
        """timermetrics: fastjson's TimerMetricsSerializeWrapper, compact, fields in alphabetical order."""
        now = [1000]
        m = TimerMetrics(os.path.join(self.root, "config", "timermetrics"), lambda: now[0])
        m.add_and_get("T", 1)
        now[0] = 2000
        m.add_and_get("T", 1)
        text = m.encode()
        self.assertEqual(text, '{"dataVersion":{"counter":2,"stateVersion":0,"timestamp":2000},'
                               '"timingCount":{"T":{"count":2,"timeStamp":2000}}}')
        self.assertTrue(m.persist())
        again = TimerMetrics(m.file.path, lambda: 0)
        self.assertTrue(again.load())
        self.assertEqual(json.loads(again.encode()), json.loads(text))
