// Command peer is franz-go (github.com/twmb/franz-go) as a test peer of kconsumer: a KIP-848
// consumer group member driven over standard input and output, with the same line protocol as
// the Java peer (peers/java/KafkaPeer.java):
//
//	peer consume --bootstrap HOST:PORT --group G (--topics a,b | --pattern REGEX) [--name N]
//	             [--instance-id I] [--commit-every-ms 200] [--protocol consumer|classic]
//
// It reports {"event":"assigned"|"revoked"|"lost","partitions":[["t",0],...]} from its rebalance
// callbacks and {"event":"record","topic":..,"partition":..,"offset":..} per record. It commits
// the offsets it processed synchronously on revocation (reported as "committed", null when the
// commit failed) and asynchronously every --commit-every-ms. Every assigned, revoked or lost
// report waits for the line "ack" before the callback returns. "close" leaves the group and exits; "crash" exits
// at once (no leave, no commit).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	outMu sync.Mutex
	acks  = make(chan struct{}, 16)
)

func emit(value map[string]any) {
	line, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

func partitionsOf(byTopic map[string][]int32) [][]any {
	out := [][]any{}
	for topic, partitions := range byTopic {
		for _, p := range partitions {
			out = append(out, []any{topic, p})
		}
	}
	return out
}

func awaitAck() {
	select {
	case <-acks:
	case <-time.After(60 * time.Second):
		emit(map[string]any{"event": "error", "message": "no ack from the driver in 60 s"})
	}
}

func main() {
	if len(os.Args) < 2 || os.Args[1] != "consume" {
		fmt.Fprintln(os.Stderr, "usage: peer consume --bootstrap HOST:PORT --group G ...")
		os.Exit(2)
	}
	flags := flag.NewFlagSet("consume", flag.ExitOnError)
	bootstrap := flags.String("bootstrap", "localhost:9092", "bootstrap servers")
	group := flags.String("group", "group", "group id")
	topics := flags.String("topics", "", "comma-separated topics")
	pattern := flags.String("pattern", "", "a regular expression of topics")
	name := flags.String("name", "franz-go-peer", "client id")
	instance := flags.String("instance-id", "", "static member id")
	commitEvery := flags.Int("commit-every-ms", 200, "asynchronous commit interval")
	protocol := flags.String("protocol", "consumer", "consumer (KIP-848) or classic")
	flags.Parse(os.Args[2:])

	var mu sync.Mutex
	processed := map[string]map[int32]kgo.EpochOffset{}
	take := func(byTopic map[string][]int32) map[string]map[int32]kgo.EpochOffset {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]map[int32]kgo.EpochOffset{}
		for topic, partitions := range byTopic {
			for _, p := range partitions {
				if offset, ok := processed[topic][p]; ok {
					if out[topic] == nil {
						out[topic] = map[int32]kgo.EpochOffset{}
					}
					out[topic][p] = offset
					delete(processed[topic], p)
				}
			}
		}
		return out
	}

	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(*bootstrap, ",")...),
		kgo.ClientID(*name),
		kgo.ConsumerGroup(*group),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			emit(map[string]any{"event": "assigned", "partitions": partitionsOf(assigned)})
			awaitAck()
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			take(lost)
			emit(map[string]any{"event": "lost", "partitions": partitionsOf(lost)})
			awaitAck()
		}),
	}
	opts = append(opts, kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
		offsets := take(revoked)
		var committed any = [][]any{}
		if len(offsets) > 0 {
			var commitErr error
			cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsgOffsetCommitRequest, resp *kmsgOffsetCommitResponse, err error) {
				commitErr = firstCommitError(resp, err)
			})
			if commitErr != nil {
				committed = nil
				emit(map[string]any{"event": "error", "message": "commit on revocation failed: " + commitErr.Error()})
			} else {
				list := [][]any{}
				for topic, partitions := range offsets {
					for p, offset := range partitions {
						list = append(list, []any{topic, p, offset.Offset})
					}
				}
				committed = list
			}
		}
		emit(map[string]any{"event": "revoked", "partitions": partitionsOf(revoked), "committed": committed})
		awaitAck()
	}))
	if *protocol == "consumer" {
		opts = append(opts, kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
	}
	if *pattern != "" {
		opts = append(opts, kgo.ConsumeTopics(*pattern), kgo.ConsumeRegex())
	} else {
		opts = append(opts, kgo.ConsumeTopics(strings.Split(*topics, ",")...))
	}
	if *instance != "" {
		opts = append(opts, kgo.InstanceID(*instance))
	}
	client, err := kgo.NewClient(opts...)
	if err != nil {
		emit(map[string]any{"event": "error", "message": err.Error()})
		os.Exit(1)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		scanner := bufio.NewScanner(os.Stdin)
		for scanner.Scan() {
			switch strings.TrimSpace(scanner.Text()) {
			case "ack":
				acks <- struct{}{}
			case "close":
				cancel()
			case "crash":
				os.Exit(137)
			}
		}
		os.Exit(137) // the driver is gone
	}()

	emit(map[string]any{"event": "ready"})
	lastCommit := time.Now()
	dirty := false
	for ctx.Err() == nil {
		pollCtx, done := context.WithTimeout(ctx, 50*time.Millisecond)
		fetches := client.PollFetches(pollCtx)
		done()
		fetches.EachError(func(topic string, partition int32, err error) {
			if err != context.Canceled && err != context.DeadlineExceeded {
				emit(map[string]any{"event": "error", "message": fmt.Sprintf("%s-%d: %v", topic, partition, err)})
			}
		})
		mu.Lock()
		fetches.EachRecord(func(record *kgo.Record) {
			emit(map[string]any{"event": "record", "topic": record.Topic, "partition": record.Partition, "offset": record.Offset})
			if processed[record.Topic] == nil {
				processed[record.Topic] = map[int32]kgo.EpochOffset{}
			}
			processed[record.Topic][record.Partition] = kgo.EpochOffset{Epoch: record.LeaderEpoch, Offset: record.Offset + 1}
			dirty = true
		})
		var pending map[string]map[int32]kgo.EpochOffset
		if dirty && time.Since(lastCommit) > time.Duration(*commitEvery)*time.Millisecond {
			lastCommit, dirty = time.Now(), false
			pending = map[string]map[int32]kgo.EpochOffset{}
			for topic, partitions := range processed {
				pending[topic] = map[int32]kgo.EpochOffset{}
				for p, offset := range partitions {
					pending[topic][p] = offset
				}
			}
		}
		mu.Unlock()
		if pending != nil {
			client.CommitOffsets(context.Background(), pending, func(_ *kgo.Client, _ *kmsgOffsetCommitRequest, resp *kmsgOffsetCommitResponse, err error) {
				if failure := firstCommitError(resp, err); failure != nil {
					emit(map[string]any{"event": "error", "message": "async commit failed: " + failure.Error()})
				}
			})
		}
		client.AllowRebalance()
	}
	client.AllowRebalance()
	client.Close()
	emit(map[string]any{"event": "closed"})
}
