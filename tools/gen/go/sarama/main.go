// The sarama scenario of tools/gen (kafka-analyzer's capture generator).
//
// It reads a JSON spec on stdin (bootstrap, topic, group, client id, codec, the records to
// produce), produces them with a SyncProducer (acks=all, one partition per record as the spec
// says), then reads them back with a consumer group (JoinGroup/SyncGroup/Heartbeat, commit).
// It prints one JSON line per produced or consumed record (partition, offset, timestamp) and
// "note" lines for anything unexpected; tools/gen/go.py turns them into the manifest.
//
// Built offline by the generator in GOPATH mode against Debian's golang-github-shopify-sarama-dev.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

type record struct {
	Partition int32       `json:"partition"`
	Key       *string     `json:"key"`
	Value     *string     `json:"value"`
	Headers   [][2]string `json:"headers"`
	Timestamp int64       `json:"timestamp"`
}

type spec struct {
	Bootstrap string   `json:"bootstrap"`
	Topic     string   `json:"topic"`
	Group     string   `json:"group"`
	ClientID  string   `json:"client_id"`
	Codec     string   `json:"codec"`
	TimeoutMs int      `json:"timeout_ms"`
	LingerMs  int      `json:"linger_ms"`
	Records   []record `json:"records"`
}

var outMu sync.Mutex

func emit(v map[string]interface{}) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

func note(format string, args ...interface{}) {
	emit(map[string]interface{}{"kind": "note", "text": fmt.Sprintf(format, args...)})
}

func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

func strOf(b []byte) interface{} {
	if b == nil {
		return nil
	}
	return string(b)
}

func codec(name string) (sarama.CompressionCodec, error) {
	switch name {
	case "none":
		return sarama.CompressionNone, nil
	case "gzip":
		return sarama.CompressionGZIP, nil
	case "snappy":
		return sarama.CompressionSnappy, nil
	case "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		return sarama.CompressionZSTD, nil
	}
	return sarama.CompressionNone, fmt.Errorf("unknown codec %q", name)
}

func config(s *spec) (*sarama.Config, error) {
	c, err := codec(s.Codec)
	if err != nil {
		return nil, err
	}
	conf := sarama.NewConfig()
	conf.Version = sarama.V2_1_0_0 // record batch v2 with headers; zstd needs 2.1
	conf.ClientID = s.ClientID
	conf.Metadata.Retry.Backoff = 200 * time.Millisecond
	conf.Producer.RequiredAcks = sarama.WaitForAll
	conf.Producer.Return.Successes = true
	conf.Producer.Partitioner = sarama.NewManualPartitioner
	conf.Producer.Compression = c
	conf.Producer.Flush.Frequency = time.Duration(s.LingerMs) * time.Millisecond
	conf.Consumer.Offsets.Initial = sarama.OffsetOldest
	conf.Consumer.Group.Session.Timeout = 6 * time.Second
	conf.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	conf.Consumer.Return.Errors = true
	return conf, nil
}

func produce(s *spec, conf *sarama.Config) int {
	p, err := sarama.NewSyncProducer(strings.Split(s.Bootstrap, ","), conf)
	if err != nil {
		note("sarama producer: %v", err)
		return 0
	}
	msgs := make([]*sarama.ProducerMessage, len(s.Records))
	for i, r := range s.Records {
		m := &sarama.ProducerMessage{
			Topic:     s.Topic,
			Partition: r.Partition,
			Timestamp: time.Unix(0, r.Timestamp*int64(time.Millisecond)),
		}
		if r.Key != nil {
			m.Key = sarama.ByteEncoder(bytesOf(r.Key))
		}
		if r.Value != nil {
			m.Value = sarama.ByteEncoder(bytesOf(r.Value))
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h[0]), Value: []byte(h[1])})
		}
		msgs[i] = m
	}
	// SendMessages: one batch (one Produce request per broker), every record's offset set.
	failed := map[*sarama.ProducerMessage]error{}
	if err := p.SendMessages(msgs); err != nil {
		if errs, ok := err.(sarama.ProducerErrors); ok {
			for _, e := range errs {
				failed[e.Msg] = e.Err
			}
		} else {
			note("sarama SendMessages: %v", err)
			return 0
		}
	}
	delivered := 0
	for i, m := range msgs {
		r := s.Records[i]
		ev := map[string]interface{}{
			"kind": "produced", "topic": s.Topic, "partition": m.Partition, "offset": m.Offset,
			"key": r.Key, "value": r.Value, "headers": r.Headers, "timestamp": r.Timestamp,
		}
		if err, bad := failed[m]; bad {
			ev["offset"] = nil
			ev["error"] = err.Error()
		} else {
			delivered++
		}
		emit(ev)
	}
	if err := p.Close(); err != nil {
		note("sarama producer close: %v", err)
	}
	return delivered
}

type handler struct {
	want   int
	mu     sync.Mutex
	got    int
	done   chan struct{}
	closed bool
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *handler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		emitConsumed(m)
		sess.MarkMessage(m, "")
		h.mu.Lock()
		h.got++
		if h.got >= h.want && !h.closed {
			h.closed = true
			close(h.done)
		}
		h.mu.Unlock()
	}
	return nil
}

// consume reads the records back as a consumer group; it returns how many it got. A group the
// broker will not let sarama join (an error from Consume, e.g. an error code sarama 1.22 does not
// know) is left at the first error: the records are then read by partition (partitionConsume).
func consume(s *spec, conf *sarama.Config, want int, deadline time.Time) int {
	g, err := sarama.NewConsumerGroup(strings.Split(s.Bootstrap, ","), s.Group, conf)
	if err != nil {
		note("sarama consumer group: %v", err)
		return 0
	}
	go func() {
		for err := range g.Errors() {
			note("sarama consumer group error: %v", err)
		}
	}()
	h := &handler{want: want, done: make(chan struct{})}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	failed := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{s.Topic}, h); err != nil {
				note("sarama consumer group gave up: %v", err)
				close(failed)
				return
			}
		}
	}()
	select {
	case <-h.done:
		time.Sleep(1600 * time.Millisecond) // heartbeats after the last record, as the other scenarios
	case <-failed:
	case <-ctx.Done():
	}
	cancel() // ends the session: the marked offsets are committed (OffsetCommit), then LeaveGroup
	<-finished
	if err := g.Close(); err != nil {
		note("sarama consumer group close: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got
}

// partitionConsume reads every partition of the topic from the oldest offset, without a group.
func partitionConsume(s *spec, conf *sarama.Config, want int, deadline time.Time) int {
	c, err := sarama.NewConsumer(strings.Split(s.Bootstrap, ","), conf)
	if err != nil {
		note("sarama consumer: %v", err)
		return 0
	}
	defer c.Close()
	parts, err := c.Partitions(s.Topic)
	if err != nil {
		note("sarama consumer partitions: %v", err)
		return 0
	}
	msgs := make(chan *sarama.ConsumerMessage)
	for _, p := range parts {
		pc, err := c.ConsumePartition(s.Topic, p, sarama.OffsetOldest)
		if err != nil {
			note("sarama ConsumePartition %d: %v", p, err)
			continue
		}
		defer pc.Close()
		go func() {
			for m := range pc.Messages() {
				msgs <- m
			}
		}()
	}
	got := 0
	timeout := time.After(time.Until(deadline))
	for got < want {
		select {
		case m := <-msgs:
			emitConsumed(m)
			got++
		case <-timeout:
			return got
		}
	}
	return got
}

func emitConsumed(m *sarama.ConsumerMessage) {
	hdrs := [][2]string{}
	for _, rh := range m.Headers {
		hdrs = append(hdrs, [2]string{string(rh.Key), string(rh.Value)})
	}
	emit(map[string]interface{}{
		"kind": "consumed", "topic": m.Topic, "partition": m.Partition, "offset": m.Offset,
		"key": strOf(m.Key), "value": strOf(m.Value), "headers": hdrs,
		"timestamp": m.Timestamp.UnixNano() / int64(time.Millisecond),
	})
}

func main() {
	var s spec
	if err := json.NewDecoder(os.Stdin).Decode(&s); err != nil {
		fmt.Fprintf(os.Stderr, "bad spec on stdin: %v\n", err)
		os.Exit(2)
	}
	deadline := time.Now().Add(time.Duration(s.TimeoutMs) * time.Millisecond)
	conf, err := config(&s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if n := produce(&s, conf); n > 0 {
		got := consume(&s, conf, n, deadline)
		if got == 0 {
			note("reading the records by partition (no group)")
			got = partitionConsume(&s, conf, n, deadline)
		}
		if got < n {
			note("consumer got %d of %d records", got, n)
		}
	}
}
