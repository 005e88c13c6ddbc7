# -*- test-case-name: rocketmq_tx.store.test.test_recovery -*-
"""
Recovery at load (Java ``DefaultMessageStore.recover``, ``CommitLog.recoverNormally`` and
``recoverAbnormally``, and the start of ``ReputMessageService``): find the valid end of the
CommitLog, cut the log and the ConsumeQueues there, and dispatch again what the ConsumeQueues
and the index lack. docs/store-format.md, "``abort`` marker and recovery", has the rules.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketmq_tx.common.errors import MessageFormatError
from rocketmq_tx.common.sysflag import MessageSysFlag
from rocketmq_tx.store.consumequeue import FILLER_SIZE, ConsumeQueue
from rocketmq_tx.store.mappedfile import MappedFile

if TYPE_CHECKING:
    from rocketmq_tx.store.store import DefaultMessageStore

__all__ = ["StoreRecovery"]

log = logging.getLogger("rocketmq_tx.store")

_TX_MASK = MessageSysFlag.TRANSACTION_MASK
_NOT_TYPE = MessageSysFlag.TRANSACTION_NOT_TYPE
_COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE


class StoreRecovery:
    """
    The recovery of one :class:`~rocketmq_tx.store.store.DefaultMessageStore`, run by its
    ``load()`` once the files are mapped; it dispatches through the store, as a put does.
    """

    def __init__(self, store: DefaultMessageStore) -> None:
        self.store = store

    def recover(self, last_exit_ok: bool) -> None:
        """Normal recovery after a clean shutdown, abnormal after a crash (``abort`` present)."""
        store = self.store
        max_phy_in_cq = -1
        repaired_min = None
        for queues in store.consume_queue_table.values():
            for cq in queues.values():
                cq.recover()
                if not last_exit_ok and self._repair_cq_tail(cq):
                    m = max(cq.max_physic_offset, 0)
                    repaired_min = m if repaired_min is None else min(repaired_min, m)
                max_phy_in_cq = max(max_phy_in_cq, cq.max_physic_offset)
        cl = store.commit_log
        files = cl.mapped_file_queue.files
        if not files:
            cl.mapped_file_queue.flushed_where = 0
            store.destroy_logics()
        else:
            check_crc = store.config.check_crc_on_recover
            if last_exit_ok:
                start = files[max(0, len(files) - 3)]
                end = start.file_from_offset
                for _info, scanned in cl.scan(start, check_crc=check_crc):
                    end = scanned
                self._truncate(end, max_phy_in_cq)
                # dispatch what the ConsumeQueues lack (Java's ReputMessageService)
                reput_from = max(cl.get_min_offset(), max_phy_in_cq if max_phy_in_cq > 0 else 0)
                if repaired_min is not None:
                    reput_from = max(cl.get_min_offset(), min(reput_from, repaired_min))
                self._redispatch(reput_from)
            else:
                start = self._abnormal_start_file(files)
                if repaired_min is not None and repaired_min < start.file_from_offset:
                    start = cl.mapped_file_queue.find_mapped_file_by_offset(repaired_min, True) or start
                end = self._replay(start, check_crc)
                self._truncate(end, max_phy_in_cq)
        self._recover_topic_queue_table()

    def _repair_cq_tail(self, cq: ConsumeQueue) -> bool:
        """
        After a crash, check the newest ConsumeQueue entries against the records they point
        to; drop torn ones (the re-dispatch rebuilds them). Java does not check this.
        """
        commit_log = self.store.commit_log
        repaired = False
        for _ in range(4):
            n = cq.get_max_offset_in_queue()
            if n <= cq.get_min_offset_in_queue():
                break
            entry = cq.get_entry(n - 1)
            if entry is None or (entry[0] == 0 and entry[1] == FILLER_SIZE):
                break
            phy, size, _ = entry
            head = commit_log.get_message(phy, 36) if phy >= 0 and size > 36 else None
            if head is not None:
                total = int.from_bytes(head[0:4], "big", signed=True)
                qid = int.from_bytes(head[12:16], "big", signed=True)
                qoff = int.from_bytes(head[20:28], "big", signed=True)
                pos = int.from_bytes(head[28:36], "big", signed=True)
                if (total, qid, qoff, pos) == (size, cq.queue_id, n - 1, phy):
                    break
                if total == 0:  # the record itself is torn: the CommitLog truncation handles it
                    break
            elif phy + size > commit_log.get_max_offset():
                break
            log.warning("ConsumeQueue %s-%d: entry %d does not match its record; dropped",
                        cq.topic, cq.queue_id, n - 1)
            cq.drop_last_entry()
            repaired = True
        return repaired

    def _abnormal_start_file(self, files: list[MappedFile]) -> MappedFile:
        store = self.store
        cp = store.checkpoint
        assert cp is not None
        limit = cp.get_min_timestamp_index() if store.config.message_index_safe else cp.get_min_timestamp()
        for f in reversed(files):
            ts = store.commit_log.first_store_timestamp_of(f)
            if ts and ts <= limit:
                log.info("abnormal recovery starts at CommitLog file %s", f.file_name)
                return f
        return files[0]

    def _truncate(self, end: int, max_phy_in_cq: int) -> None:
        store = self.store
        store.commit_log.set_end(end)
        for queues in store.consume_queue_table.values():
            for cq in queues.values():
                if cq.max_physic_offset >= end or max_phy_in_cq >= end:
                    cq.truncate_dirty_logic_files(end)

    def _redispatch(self, from_offset: int) -> None:
        cl = self.store.commit_log
        f = cl.mapped_file_queue.find_mapped_file_by_offset(from_offset)
        if f is None:
            return
        for info, _end in cl.scan(f, check_crc=False):
            if info is not None and info[2] >= from_offset:
                self._redispatch_one(info)

    def _replay(self, start: MappedFile, check_crc: bool) -> int:
        """
        Abnormal recovery's scan from *start*: validate every record and dispatch those whose
        ConsumeQueue or index entries are missing; returns the end of the valid log.

        A record is skipped without a closer look when it lies below where its queue and the
        index stood before the scan: dispatching only moves those marks forward, so such a
        record never needs it. This check runs per record, so it uses local caches.
        """
        store = self.store
        table = store.consume_queue_table
        index_files = store.index_service.files
        index_end = (index_files[-1].end_phy_offset if index_files else -1) \
            if store.config.message_index_enable else None
        queue_ends: dict[tuple[str, int], int] = {}
        end = start.file_from_offset
        for info, scanned in store.commit_log.scan(start, check_crc=check_crc):
            end = scanned
            if info is None:
                continue
            topic, queue_id, phys, size, sys_flag = info[:5]
            if index_end is not None and phys >= index_end:
                self._redispatch_one(info)
                continue
            tx = sys_flag & _TX_MASK
            if tx == _NOT_TYPE or tx == _COMMIT:
                key = (topic, queue_id)
                queue_end = queue_ends.get(key)
                if queue_end is None:
                    queues = table.get(topic)
                    cq = queues.get(queue_id) if queues is not None else None
                    queue_end = queue_ends[key] = cq.max_physic_offset if cq is not None else -1
                if phys + size > queue_end:
                    self._redispatch_one(info)
        return end

    def _redispatch_one(self, info) -> None:
        """Dispatch a recovered record unless its ConsumeQueue entry and index entries exist."""
        store = self.store
        topic, queue_id, phys, size, sys_flag = info[:5]
        need = False
        tx = sys_flag & _TX_MASK
        if tx == _NOT_TYPE or tx == _COMMIT:
            queues = store.consume_queue_table.get(topic)
            cq = queues.get(queue_id) if queues is not None else None
            need = cq is None or phys + size > cq.max_physic_offset
        if not need and store.config.message_index_enable:
            files = store.index_service.files
            need = not files or phys >= files[-1].end_phy_offset
        if need:
            req = store.commit_log.dispatch_request(info, store.delay_levels)
            if req is not None:
                try:
                    store.dispatch(req)
                except MessageFormatError as e:
                    # A record under a name no put accepts (a store written by another
                    # program): it stays in the CommitLog, readable by offset, in no queue.
                    log.warning("recovery: record at %d not dispatched: %s", phys, e)

    def _recover_topic_queue_table(self) -> None:
        store = self.store
        table = {}
        min_phy = store.commit_log.get_min_offset()
        for topic, queues in store.consume_queue_table.items():
            for qid, cq in queues.items():
                table[f"{topic}-{qid}"] = cq.get_max_offset_in_queue()
                cq.correct_min_offset(min_phy)
        store.topic_queue_table = table
