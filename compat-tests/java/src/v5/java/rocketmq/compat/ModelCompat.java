package rocketmq.compat;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;

/** MessageModel moved between 4.9 and 5.x; src/v5/java has the same class and API. */
public final class ModelCompat {
    private ModelCompat() {
    }

    public static void broadcasting(DefaultMQPushConsumer consumer) {
        consumer.setMessageModel(MessageModel.BROADCASTING);
    }
}
