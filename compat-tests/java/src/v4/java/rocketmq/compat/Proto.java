package rocketmq.compat;

import java.util.HashMap;
import java.util.Map;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.header.PullMessageResponseHeader;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeader;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.exception.RemotingCommandException;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Version-specific protocol helpers, RocketMQ 4.9.x flavour: the header classes live in
 * org.apache.rocketmq.common.protocol.* here and in org.apache.rocketmq.remoting.protocol.*
 * in 5.x. src/v5/java has a class of the same name and API.
 */
public final class Proto {
    private Proto() {
    }

    public static final int SEND_MESSAGE_V2 = RequestCode.SEND_MESSAGE_V2;
    public static final int PULL_MESSAGE = RequestCode.PULL_MESSAGE;
    public static final int GET_ROUTEINFO_BY_TOPIC = RequestCode.GET_ROUTEINFO_BY_TOPIC;

    /** Message properties used by the SEND_MESSAGE_V2 vector and benchmark. */
    public static Map<String, String> sendProperties() {
        Map<String, String> props = new HashMap<>();
        props.put(MessageConst.PROPERTY_KEYS, "k1 k2");
        props.put(MessageConst.PROPERTY_TAGS, "TagA");
        props.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "0A0000010000000000000000000000AA");
        props.put(MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
        return props;
    }

    /** The SendMessageRequestHeader (V1) a DefaultMQProducer would fill for our vector. */
    public static SendMessageRequestHeader sendHeaderV1() {
        SendMessageRequestHeader h = new SendMessageRequestHeader();
        h.setProducerGroup("PG");
        h.setTopic("TopicTest");
        h.setDefaultTopic("TBW102");
        h.setDefaultTopicQueueNums(4);
        h.setQueueId(1);
        h.setSysFlag(0);
        h.setBornTimestamp(1700000000123L);
        h.setFlag(0);
        h.setProperties(MessageDecoder.messageProperties2String(sendProperties()));
        h.setReconsumeTimes(0);
        h.setUnitMode(false);
        h.setBatch(false);
        h.setMaxReconsumeTimes(null);
        return h;
    }

    /** A fresh SEND_MESSAGE_V2 request (header V2 converted from V1, as the client does). */
    public static RemotingCommand sendMessageV2(byte[] body) {
        SendMessageRequestHeaderV2 v2 = SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(sendHeaderV1());
        RemotingCommand request = RemotingCommand.createRequestCommand(SEND_MESSAGE_V2, v2);
        request.setBody(body);
        return request;
    }

    public static CommandCustomHeader decodeSendV2(RemotingCommand cmd) throws RemotingCommandException {
        return cmd.decodeCommandCustomHeader(SendMessageRequestHeaderV2.class);
    }

    /** A PULL_MESSAGE success response as the broker builds it (header filled, body set). */
    public static RemotingCommand pullResponse(byte[] body, long nextBeginOffset) {
        RemotingCommand response = RemotingCommand.createResponseCommand(PullMessageResponseHeader.class);
        PullMessageResponseHeader h = (PullMessageResponseHeader) response.readCustomHeader();
        h.setSuggestWhichBrokerId(0L);
        h.setNextBeginOffset(nextBeginOffset);
        h.setMinOffset(0L);
        h.setMaxOffset(nextBeginOffset);
        response.setCode(0);
        response.setRemark("FOUND");
        response.setBody(body);
        return response;
    }

    public static CommandCustomHeader decodePullResponseHeader(RemotingCommand cmd) throws RemotingCommandException {
        return cmd.decodeCommandCustomHeader(PullMessageResponseHeader.class);
    }

    /** Create a topic through the producer's admin API (5.x added an attributes argument). */
    public static void createTopic(org.apache.rocketmq.client.producer.DefaultMQProducer producer, String topic,
                                   int queueNums) throws Exception {
        producer.createTopic("TBW102", topic, queueNums);
    }
}
