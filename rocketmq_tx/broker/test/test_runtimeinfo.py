"""GET_BROKER_RUNTIME_INFO: Java 4.9's keys, each figure measured (not a constant), Java's texts."""

from __future__ import annotations

import re

from twisted.internet.defer import Deferred

from rocketmq_tx.broker.test.test_processors import BrokerTestCase
from rocketmq_tx.broker.test.test_pull import PullTestCase
from rocketmq_tx.broker.test.util import Ctx
from rocketmq_tx.common import fastjson
from rocketmq_tx.remoting import RemotingCommand, RequestCode, ResponseCode
from rocketmq_tx.store.status import PutMessageStatus

#: Java 4.9.8's prepareRuntimeInfo over DefaultMessageStore.getRuntimeInfo, without the keys
#: named after a path (commitLogDiskRatio_<path>) or a delay level (scheduleMessageOffset_<n>)
#: and without remainHowManyDataToCommit (only with transientStorePoolEnable)
JAVA_49_KEYS = frozenset({
    "bootTimestamp", "runtime", "putMessageEntireTimeMax", "putMessageTimesTotal", "putMessageFailedTimes",
    "putMessageSizeTotal", "putMessageDistributeTime", "putMessageAverageSize", "dispatchMaxBuffer",
    "getMessageEntireTimeMax", "putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferedTps",
    "putLatency99", "putLatency999", "commitLogDiskRatio", "consumeQueueDiskRatio", "commitLogMinOffset",
    "commitLogMaxOffset", "brokerVersionDesc", "brokerVersion", "msgPutTotalYesterdayMorning",
    "msgPutTotalTodayMorning", "msgPutTotalTodayNow", "msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning",
    "msgGetTotalTodayNow", "sendThreadPoolQueueSize", "sendThreadPoolQueueCapacity", "pullThreadPoolQueueSize",
    "pullThreadPoolQueueCapacity", "queryThreadPoolQueueSize", "queryThreadPoolQueueCapacity",
    "EndTransactionQueueSize", "EndTransactionThreadPoolQueueCapacity", "dispatchBehindBytes",
    "pageCacheLockTimeMills", "sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills",
    "queryThreadPoolQueueHeadWaitTimeMills", "earliestMessageTimeStamp", "startAcceptSendRequestTimeStamp",
    "remainTransientStoreBufferNumbs", "remainHowManyDataToFlush", "commitLogDirCapacity",
})
#: ours beyond Java 4.9's: 5.x's spelling of the transfer rate (5.x tools read it) and 5.x's timer keys
OURS_ONLY = frozenset({"getTransferredTps", "timerReadBehind", "timerOffsetBehind", "timerCongestNum",
                       "timerEnqueueTps", "timerDequeueTps"})


class RuntimeInfoCase(BrokerTestCase):
    """Reads the table over the processor table; samples the rates as the broker's timer does."""

    def info(self) -> dict[str, str]:
        table = fastjson.loads(self.call(RequestCode.GET_BROKER_RUNTIME_INFO).body)["table"]
        return table  # type: ignore[no-any-return]

    def sample(self, seconds: int = 1) -> None:
        for _ in range(seconds):
            self.reactor.advance(1)
            self.store.store_stats_service.sampling()


class RuntimeInfoTests(RuntimeInfoCase):
    def test_keys_are_java_49s(self) -> None:
        """Every key of Java 4.9's table is there, and ours only add the ones listed."""
        info = self.info()
        path = self.store.config.store_path_commit_log
        self.assertIn(f"commitLogDiskRatio_{path}", info)
        keys = {k for k in info if not k.startswith(("commitLogDiskRatio_", "scheduleMessageOffset_"))}
        self.assertEqual(keys - JAVA_49_KEYS, OURS_ONLY)
        self.assertEqual(JAVA_49_KEYS - keys, set())

    def test_idle_texts(self) -> None:
        """An idle broker reads as an idle Java broker: Java's 1-put quirk, empty rate windows."""
        info = self.info()
        self.assertEqual((info["putMessageTimesTotal"], info["putMessageAverageSize"], info["putTps"]),
                         ("1", "0.0", "  "))
        self.assertEqual((info["putMessageDistributeTime"], info["putLatency99"]), ("null", "0.00"))
        self.assertEqual((info["remainTransientStoreBufferNumbs"], info["remainHowManyDataToFlush"]),
                         ("2147483647", "0 B"))
        self.assertRegex(info["commitLogDirCapacity"], r"^Total : \d+(\.\d)? [KMGTPE]?i?B, Free : \d+(\.\d)? "
                                                       r"[KMGTPE]?i?B\.$")
        for key in ("sendThreadPoolQueueSize", "pullThreadPoolQueueSize", "queryThreadPoolQueueSize",
                    "EndTransactionQueueSize", "sendThreadPoolQueueHeadWaitTimeMills",
                    "pullThreadPoolQueueHeadWaitTimeMills", "queryThreadPoolQueueHeadWaitTimeMills",
                    "pageCacheLockTimeMills", "dispatchBehindBytes"):
            self.assertEqual(info[key], "0", key)

    def test_puts(self) -> None:
        """Puts: the count, bytes, the rate over 10 s, and the minute's latency distribution."""
        self.sample()
        for _ in range(20):
            self.assertEqual(self.send().code, ResponseCode.SUCCESS)
        self.sample(10)
        info = self.info()
        self.assertEqual(info["putMessageTimesTotal"], "20")
        self.assertEqual(int(info["putMessageSizeTotal"]), self.store.get_max_phy_offset())
        self.assertEqual(info["putTps"], "2.0  ")
        self.assertEqual(self.store.get_max_phy_offset(), 3320)
        self.assertEqual(info["remainHowManyDataToFlush"], "3.2 KiB")  # nothing flushed yet (ASYNC_FLUSH)
        self.sample(50)
        info = self.info()
        self.assertEqual(info["putMessageDistributeTime"],
                         "[<=0ms]:20 [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 "
                         "[500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ")
        self.assertEqual(info["putMessageEntireTimeMax"], "0")

    def test_query_pool_figures(self) -> None:
        """QUERY_MESSAGE is answered at once: its queue stays empty."""
        self.send()
        self.call(RequestCode.QUERY_MESSAGE, {"topic": "TopicTest", "key": "k1", "maxNum": "32", "beginTimestamp": "0",
                                              "endTimestamp": str(2 ** 62)})
        info = self.info()
        self.assertEqual((info["queryThreadPoolQueueSize"], info["queryThreadPoolQueueHeadWaitTimeMills"]), ("0", "0"))

    def test_pools_by_request_code(self) -> None:
        """A request answered later counts in its Java pool's queue (END_TRANSACTION's, CONSUMER_SEND_MSG_BACK in
        the send pool's, VIEW_MESSAGE_BY_ID in the query pool's) until answered; other codes in none."""
        answers = {code: Deferred() for code in (RequestCode.END_TRANSACTION, RequestCode.CONSUMER_SEND_MSG_BACK,
                                                 RequestCode.VIEW_MESSAGE_BY_ID, RequestCode.PULL_MESSAGE)}
        for code, d in answers.items():
            self.controller.track_request(RemotingCommand.request(code), d)
        self.reactor.advance(0.0045)
        info = self.info()
        self.assertEqual([info[k] for k in ("EndTransactionQueueSize", "sendThreadPoolQueueSize",
                                             "sendThreadPoolQueueHeadWaitTimeMills", "queryThreadPoolQueueSize",
                                             "pullThreadPoolQueueSize")], ["1", "1", "4", "1", "0"])
        for d in answers.values():
            d.callback(None)
        info = self.info()
        self.assertEqual([info[k] for k in ("EndTransactionQueueSize", "sendThreadPoolQueueSize",
                                             "queryThreadPoolQueueSize")], ["0", "0", "0"])


class SyncFlushRuntimeInfoTests(RuntimeInfoCase):
    """flushDiskType=SYNC_FLUSH: the put latency and the send queue include the group commit wait."""

    keys = {"flushDiskType": "SYNC_FLUSH"}

    def send_later(self) -> Deferred:
        header = self.send_header(queue_id=0)
        d = self.dispatch(RequestCode.SEND_MESSAGE, header.to_ext_fields(), b"hello")
        assert isinstance(d, Deferred)
        return d

    def test_puts(self) -> None:
        """Each put settled by its group commit: counted and in the rate."""
        gc = self.store.group_commit_service
        self.sample()
        for _ in range(20):
            d = self.send_later()
            gc.commit()
            self.assertEqual(self.successResultOf(d).code, ResponseCode.SUCCESS)
        self.sample(10)
        info = self.info()
        self.assertEqual((info["putMessageTimesTotal"], info["putTps"]), ("20", "2.0  "))
        self.assertEqual(info["remainHowManyDataToFlush"], "0 B")

    def test_latency_includes_flush_wait(self) -> None:
        """putMessageEntireTimeMax and the distribution run from the append to the flushed result."""
        d1 = self.send_later()
        d2 = self.send_later()
        self.reactor.advance(0.0255)
        info = self.info()
        # the two sends wait for their group commit: the send queue's figures
        self.assertEqual((info["sendThreadPoolQueueSize"], info["sendThreadPoolQueueHeadWaitTimeMills"]),
                         ("2", "25"))
        self.assertEqual(info["putMessageEntireTimeMax"], "0")
        self.store.group_commit_service.commit()
        self.successResultOf(d1), self.successResultOf(d2)
        info = self.info()
        self.assertEqual((info["sendThreadPoolQueueSize"], info["sendThreadPoolQueueHeadWaitTimeMills"]),
                         ("0", "0"))
        self.assertEqual(info["putMessageEntireTimeMax"], "25")
        self.sample(61)
        info = self.info()
        self.assertTrue(info["putMessageDistributeTime"].startswith("[<=0ms]:0 [0~10ms]:0 [10~50ms]:2 "),
                        info["putMessageDistributeTime"])
        self.assertEqual(info["putLatency99"], "25.00")  # index 1 of 2 in the bucket (24, 26]: 24 + 2 * 1 / 2

    def test_failed_put_counted(self) -> None:
        """A put whose flush times out is a failed put."""
        d = self.send_later()
        self.store.group_commit_service.fail_all(PutMessageStatus.FLUSH_DISK_TIMEOUT)
        self.assertEqual(self.successResultOf(d).code, ResponseCode.FLUSH_DISK_TIMEOUT)
        self.assertEqual(self.info()["putMessageFailedTimes"], "1")

    def test_lock_time_during_group_commit(self) -> None:
        """pageCacheLockTimeMills: how long the group commit in progress has been running."""
        gc = self.store.group_commit_service
        original = gc._flush
        seen = []

        def slow_flush() -> int:
            self.reactor.advance(0.0315)
            seen.append(self.info()["pageCacheLockTimeMills"])
            return original()
        gc._flush = slow_flush  # type: ignore[method-assign]
        d = self.send_later()
        gc.commit()
        self.successResultOf(d)
        self.assertEqual((seen, self.info()["pageCacheLockTimeMills"]), (["31"], "0"))


class PullQueueFiguresTests(PullTestCase):
    def test_woken_pulls_waiting_their_turn(self) -> None:
        """The pull queue: long polls woken by an arrival and waiting for their slice (256 a turn)."""
        hold = self.controller.pull_request_hold_service
        hold.wake_slice = 3
        parked = [self.pull_later(0, ctx=Ctx(f"10.0.0.{i}:1")) for i in range(8)]
        table = {}

        def between_slices() -> None:
            self.reactor.rightNow += 0.0095
            table.update(self.controller.runtime_info())
        self.put()
        self.reactor.callLater(0, between_slices)  # behind the arrival the put scheduled
        self.assertEqual(self.controller.runtime_info()["pullThreadPoolQueueSize"], "0")  # parked: not queued
        self.reactor.advance(0)
        self.assertEqual((table["pullThreadPoolQueueSize"], table["pullThreadPoolQueueHeadWaitTimeMills"]),
                         ("5", "9"))
        self.assertTrue(all(d.called for d in parked))
        info = self.controller.runtime_info()
        self.assertEqual((info["pullThreadPoolQueueSize"], info["pullThreadPoolQueueHeadWaitTimeMills"]), ("0", "0"))

    def test_get_figures(self) -> None:
        """Reads that found messages, and those that did not, and the messages transferred."""
        self.put()
        self.put()
        self.assertEqual(self.pull(0).code, ResponseCode.SUCCESS)
        self.assertEqual(self.pull(2).code, ResponseCode.PULL_NOT_FOUND)
        stats = self.store.store_stats_service
        self.assertEqual((stats.get_message_times_total_found, stats.get_message_times_total_miss,
                          stats.get_message_transferred_msg_count), (1, 1, 2))
        self.assertTrue(re.fullmatch(r"\d+", self.controller.runtime_info()["getMessageEntireTimeMax"]))
