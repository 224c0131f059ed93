import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * A minimal source connector for the Kafka Connect peer test (peers/build.py): each of its
 * tasks writes "NAME-TASK-SEQ" lines to a topic, one every `interval.ms`, and resumes from the
 * source offset Connect stored for it. Connect's runtime (the distributed worker, its group
 * membership, rebalances and offset storage) is what is under test; this connector only makes
 * the tasks' work visible in the topic.
 */
public class TickSource extends SourceConnector {
    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return TickTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        for (int i = 0; i < maxTasks; i++) {
            Map<String, String> config = new java.util.HashMap<>(props);
            config.put("task.number", Integer.toString(i));
            configs.add(config);
        }
        return configs;
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef()
            .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "where the lines go")
            .define("interval.ms", ConfigDef.Type.LONG, 100L, ConfigDef.Importance.LOW, "between lines");
    }

    @Override
    public String version() {
        return "1";
    }

    public static class TickTask extends SourceTask {
        private String topic;
        private String name;
        private long interval;
        private long sequence;
        private Map<String, String> partition;

        @Override
        public String version() {
            return "1";
        }

        @Override
        public void start(Map<String, String> props) {
            topic = props.get("topic");
            interval = Long.parseLong(props.getOrDefault("interval.ms", "100"));
            name = props.get("name") + "-" + props.get("task.number");
            partition = Collections.singletonMap("task", name);
            Map<String, Object> offset = context.offsetStorageReader().offset(partition);
            sequence = offset == null ? 0 : ((Number) offset.get("next")).longValue();
        }

        @Override
        public List<SourceRecord> poll() throws InterruptedException {
            Thread.sleep(interval);
            String line = name + "-" + sequence;
            sequence++;
            Map<String, Long> offset = Collections.singletonMap("next", sequence);
            return Collections.singletonList(
                new SourceRecord(partition, offset, topic, null, Schema.STRING_SCHEMA, name, Schema.STRING_SCHEMA, line));
        }

        @Override
        public void stop() {
        }
    }
}
