"""GET_BROKER_HA_STATUS (907): ``HARuntimeInfo`` as Java 5.x's fastjson writes it, on a master and on a slave."""

from __future__ import annotations

from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from rocketmq_tx.broker.test.test_processors import BrokerTestCase, props
from rocketmq_tx.common.route import TopicConfig
from rocketmq_tx.remoting import RequestCode, ResponseCode
from rocketmq_tx.remoting.ha import encode_report


class MasterHAStatusTests(BrokerTestCase):
    def test_master(self) -> None:
        self.controller.topic_config_manager.update_topic_config(TopicConfig("T", 1, 1))
        self.assertEqual(self.send("T", body=b"x" * 100, queue_id=0, body_props=props(WAIT="true")).code,
                         ResponseCode.SUCCESS)
        end = self.store.get_max_phy_offset()
        ha = self.controller.ha_service
        assert ha is not None
        conn = ha.buildProtocol(None)
        conn.makeConnection(StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.7", 40001)))
        conn.dataReceived(encode_report(10))
        response = self.call(RequestCode.GET_BROKER_HA_STATUS)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        # fastjson: fields in name order, the master's null masterAddr left out
        self.assertEqual(response.body.decode(), (
            '{"haClientRuntimeInfo":{"lastReadTimestamp":0,"lastWriteTimestamp":0,"masterFlushOffset":0,'
            '"maxOffset":0,"transferredByteInSecond":0},"haConnectionInfo":[{"addr":"10.0.0.7:40001",'
            f'"diff":{end - 10},"inSync":true,"slaveAckOffset":10,"transferFromWhere":10,'
            f'"transferredByteInSecond":0}}],"inSyncSlaveNums":1,"master":true,"masterCommitLogMaxOffset":{end}}}'))


class SlaveHAStatusTests(BrokerTestCase):
    keys = {"brokerRole": "SLAVE", "brokerId": 1, "haMasterAddress": "10.0.0.1:10912"}

    def test_slave(self) -> None:
        response = self.call(RequestCode.GET_BROKER_HA_STATUS)
        self.assertEqual(response.code, ResponseCode.SUCCESS)
        self.assertEqual(response.body.decode(), (
            '{"haClientRuntimeInfo":{"lastReadTimestamp":0,"lastWriteTimestamp":0,"masterAddr":"10.0.0.1:10912",'
            '"masterFlushOffset":0,"maxOffset":0,"transferredByteInSecond":0},"haConnectionInfo":[],'
            '"inSyncSlaveNums":0,"master":false,"masterCommitLogMaxOffset":0}'))
