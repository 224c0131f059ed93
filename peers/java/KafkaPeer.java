import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Apache Kafka Java client as a test peer of kconsumer, driven over standard input and output
 * (one JSON object per line out, one word per line in).
 *
 * <pre>
 * KafkaPeer consume --bootstrap HOST:PORT --group G (--topics a,b | --pattern REGEX) [--name N]
 *                   [--instance-id I] [--commit-every-ms 200] [--wait-start yes]
 *                   [--prop key=value ...]
 * KafkaPeer produce --bootstrap HOST:PORT --topic T --count N [--partition P] [--end commit|abort]
 *                   [--prop key=value ...]
 * </pre>
 *
 * consume: a KafkaConsumer (group.protocol=consumer unless a --prop says otherwise) reporting
 * {"event":"assigned"|"revoked"|"lost","partitions":[["t",0],...]} from its rebalance listener
 * and {"event":"record","topic":..,"partition":..,"offset":..} for each record. It commits the
 * offsets it processed synchronously when partitions are revoked (reported as "committed", null
 * when the commit failed) and asynchronously every --commit-every-ms. Every assigned, revoked or
 * lost report waits for the line "ack" before the callback returns, so whoever reads the reports
 * learns of an assignment before a record of it is read, and of a release before the partition
 * can move. With --wait-start yes the consumer, once made, reports {"event":"waiting"} and
 * subscribes only at the line "start" (a driver times a join without the JVM's start). "ready"
 * follows the subscription. "close" closes the consumer (leaving the group);
 * "crash" halts the JVM at once (no leave, no commit).
 *
 * produce: a KafkaProducer with the client's defaults (idempotence on) sending N records,
 * reporting {"event":"produced","partition":..,"offset":..} per record, then {"event":"done"},
 * or {"event":"error","message":..} and exit status 1. With a transactional.id (a --prop), the
 * records are sent in one transaction, committed or aborted as --end says (commit by default).
 */
public final class KafkaPeer {
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final BlockingQueue<String> ACKS = new LinkedBlockingQueue<>();
    private static final BlockingQueue<String> STARTS = new LinkedBlockingQueue<>();
    private static volatile boolean closing = false;

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println("usage: KafkaPeer consume|produce --bootstrap HOST:PORT ...");
            System.exit(2);
        }
        Map<String, List<String>> options = parse(Arrays.copyOfRange(args, 1, args.length));
        switch (args[0]) {
            case "consume" -> consume(options);
            case "produce" -> produce(options);
            default -> {
                System.err.println("unknown mode " + args[0]);
                System.exit(2);
            }
        }
    }

    private static Map<String, List<String>> parse(String[] args) {
        Map<String, List<String>> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.computeIfAbsent(args[i].replaceFirst("^--", ""), k -> new ArrayList<>()).add(args[i + 1]);
        }
        return options;
    }

    private static String one(Map<String, List<String>> options, String name, String fallback) {
        List<String> values = options.get(name);
        return values == null ? fallback : values.get(values.size() - 1);
    }

    private static Properties properties(Map<String, List<String>> options) {
        Properties props = new Properties();
        props.put("bootstrap.servers", one(options, "bootstrap", "localhost:9092"));
        for (String pair : options.getOrDefault("prop", List.of())) {
            int equals = pair.indexOf('=');
            props.put(pair.substring(0, equals), pair.substring(equals + 1));
        }
        return props;
    }

    // -- consume ---------------------------------------------------------------------------------

    private static void consume(Map<String, List<String>> options) throws Exception {
        Properties props = properties(options);
        props.putIfAbsent("group.protocol", "consumer");
        props.put("group.id", one(options, "group", "group"));
        props.put("client.id", one(options, "name", "java-peer"));
        props.putIfAbsent("auto.offset.reset", "earliest");
        props.putIfAbsent("enable.auto.commit", "false");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        String instance = one(options, "instance-id", null);
        if (instance != null) {
            props.put("group.instance.id", instance);
        }
        long commitEveryMs = Long.parseLong(one(options, "commit-every-ms", "200"));
        Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        Thread commands = new Thread(() -> readCommands(consumer), "peer-commands");
        commands.setDaemon(true);
        commands.start();

        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                emit("assigned", partitions, null);
                awaitAck();
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (TopicPartition tp : partitions) {
                    OffsetAndMetadata next = processed.remove(tp);
                    if (next != null) {
                        offsets.put(tp, next);
                    }
                }
                String committed = "[]";
                if (!offsets.isEmpty()) {
                    try {
                        consumer.commitSync(offsets);
                        committed = offsetsJson(offsets);
                    } catch (RuntimeException e) {
                        committed = "null";
                        error("commit on revocation failed: " + e);
                    }
                }
                emit("revoked", partitions, committed);
                awaitAck();
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                for (TopicPartition tp : partitions) {
                    processed.remove(tp);
                }
                emit("lost", partitions, null);
                awaitAck();
            }
        };
        if ("yes".equals(one(options, "wait-start", "no"))) {
            OUT.println("{\"event\":\"waiting\"}");
            if (!"start".equals(STARTS.take())) { // closed before it started
                consumer.close();
                OUT.println("{\"event\":\"closed\"}");
                return;
            }
        }
        String pattern = one(options, "pattern", null);
        if (pattern != null) {
            consumer.subscribe(new SubscriptionPattern(pattern), listener);
        } else {
            consumer.subscribe(Arrays.asList(one(options, "topics", "").split(",")), listener);
        }
        OUT.println("{\"event\":\"ready\"}");
        long lastCommit = System.currentTimeMillis();
        boolean dirty = false;
        try {
            while (!closing) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(50));
                } catch (WakeupException e) {
                    break;
                } catch (RuntimeException e) {
                    error("poll failed: " + e);
                    Thread.sleep(50);
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    OUT.println("{\"event\":\"record\",\"topic\":" + quote(record.topic()) + ",\"partition\":"
                            + record.partition() + ",\"offset\":" + record.offset() + "}");
                    processed.put(new TopicPartition(record.topic(), record.partition()),
                            new OffsetAndMetadata(record.offset() + 1));
                    dirty = true;
                }
                if (dirty && System.currentTimeMillis() - lastCommit > commitEveryMs) {
                    lastCommit = System.currentTimeMillis();
                    dirty = false;
                    consumer.commitAsync(new HashMap<>(processed), (offsets, e) -> {
                        if (e != null) {
                            error("async commit failed: " + e);
                        }
                    });
                }
            }
        } finally {
            try {
                consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(30)));
            } catch (RuntimeException e) {
                error("close failed: " + e);
            }
            OUT.println("{\"event\":\"closed\"}");
        }
    }

    private static void readCommands(KafkaConsumer<byte[], byte[]> consumer) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                switch (line.trim()) {
                    case "ack" -> ACKS.add("ack");
                    case "start" -> STARTS.add("start");
                    case "close" -> {
                        closing = true;
                        STARTS.add("close");
                        consumer.wakeup();
                    }
                    case "crash" -> Runtime.getRuntime().halt(137);
                    default -> error("unknown command " + line);
                }
            }
        } catch (Exception e) {
            // stdin closed: the driver is gone
        }
        Runtime.getRuntime().halt(137);
    }

    private static void awaitAck() {
        try {
            if (ACKS.poll(60, TimeUnit.SECONDS) == null) {
                error("no ack from the driver in 60 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void emit(String event, Collection<TopicPartition> partitions, String committed) {
        StringBuilder json = new StringBuilder("{\"event\":\"").append(event).append("\",\"partitions\":[");
        boolean first = true;
        for (TopicPartition tp : partitions) {
            json.append(first ? "" : ",").append('[').append(quote(tp.topic())).append(',').append(tp.partition()).append(']');
            first = false;
        }
        json.append(']');
        if (committed != null) {
            json.append(",\"committed\":").append(committed);
        }
        OUT.println(json.append('}'));
    }

    private static String offsetsJson(Map<TopicPartition, OffsetAndMetadata> offsets) {
        StringBuilder json = new StringBuilder("[");
        boolean first = true;
        for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : offsets.entrySet()) {
            json.append(first ? "" : ",").append('[').append(quote(entry.getKey().topic())).append(',')
                    .append(entry.getKey().partition()).append(',').append(entry.getValue().offset()).append(']');
            first = false;
        }
        return json.append(']').toString();
    }

    // -- produce ---------------------------------------------------------------------------------

    private static void produce(Map<String, List<String>> options) {
        Properties props = properties(options);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.putIfAbsent("delivery.timeout.ms", "20000");
        props.putIfAbsent("request.timeout.ms", "10000");
        props.putIfAbsent("max.block.ms", "20000");
        String topic = one(options, "topic", "topic");
        int count = Integer.parseInt(one(options, "count", "1"));
        String partition = one(options, "partition", null);
        boolean transactional = props.getProperty("transactional.id") != null;
        boolean abort = "abort".equals(one(options, "end", "commit"));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            if (transactional) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                byte[] value = ("java-" + i).getBytes(StandardCharsets.UTF_8);
                sent.add(producer.send(partition == null
                        ? new ProducerRecord<>(topic, value)
                        : new ProducerRecord<>(topic, Integer.parseInt(partition), null, value)));
            }
            for (java.util.concurrent.Future<RecordMetadata> future : sent) {
                RecordMetadata metadata = future.get();
                OUT.println("{\"event\":\"produced\",\"partition\":" + metadata.partition() + ",\"offset\":"
                        + metadata.offset() + "}");
            }
            if (transactional && abort) {
                producer.abortTransaction();
            } else if (transactional) {
                producer.commitTransaction();
            }
            OUT.println("{\"event\":\"done\"}");
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            OUT.println("{\"event\":\"error\",\"message\":" + quote(cause.toString()) + "}");
            System.exit(1);
        }
    }

    // -- output ----------------------------------------------------------------------------------

    private static void error(String message) {
        OUT.println("{\"event\":\"error\",\"message\":" + quote(message) + "}");
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
