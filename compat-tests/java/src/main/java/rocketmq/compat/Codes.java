package rocketmq.compat;

/** Request codes of the harness' echo contract (not RocketMQ codes). */
public final class Codes {
    private Codes() {
    }

    /** Response: code 0, same extFields, same body, remark "echo". */
    public static final int ECHO = 9001;
    /** Oneway; the server counts it and sends nothing back. */
    public static final int ONEWAY_SINK = 9002;
    /** Response: code 0, ext field "count" = number of ONEWAY_SINK requests seen so far. */
    public static final int SINK_COUNT = 9003;
    /** Not registered anywhere: must yield REQUEST_CODE_NOT_SUPPORTED (3). */
    public static final int UNKNOWN = 7777;
}
