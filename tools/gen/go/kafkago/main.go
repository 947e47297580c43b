// The kafka-go scenario of tools/gen (kafka-analyzer's capture generator).
//
// It reads a JSON spec on stdin (bootstrap, topic, group, client id, codec, the records to
// produce), writes them with a kafka-go Writer (acks=all, each record to the partition the spec
// says, through a Balancer), then reads them back with a Reader in a consumer group (GroupID:
// JoinGroup/SyncGroup/Heartbeat, one commit; kafka-go 0.2 sends no LeaveGroup on Close). kafka-go 0.2 writes message
// sets of magic 1: no headers, and the Writer reports no offsets (the consumed lines have them).
// It prints one JSON line per produced or consumed record and "note" lines for anything
// unexpected; tools/gen/go.py turns them into the manifest.
//
// Built offline by the generator in GOPATH mode against Debian's golang-github-segmentio-kafka-go-dev.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/gzip"
	"github.com/segmentio/kafka-go/lz4"
	"github.com/segmentio/kafka-go/snappy"
)

type record struct {
	Partition int     `json:"partition"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Timestamp int64   `json:"timestamp"`
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

func emit(v map[string]interface{}) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
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

func codec(name string) (kafka.CompressionCodec, error) {
	switch name {
	case "none":
		return nil, nil
	case "gzip":
		return gzip.NewCompressionCodec(), nil
	case "snappy":
		return snappy.NewCompressionCodec(), nil
	case "lz4":
		return lz4.NewCompressionCodec(), nil
	}
	return nil, fmt.Errorf("unknown codec %q (kafka-go 0.2 has none, gzip, snappy, lz4)", name)
}

// byKey sends each record to the partition its spec names.
type byKey map[string]int

func (b byKey) Balance(msg kafka.Message, partitions ...int) int {
	return b[string(msg.Key)]
}

func produce(s *spec, dialer *kafka.Dialer, c kafka.CompressionCodec, deadline time.Time) int {
	parts := byKey{}
	msgs := make([]kafka.Message, len(s.Records))
	for i, r := range s.Records {
		if r.Key == nil {
			fmt.Fprintln(os.Stderr, "every kafka-go record needs a key (the balancer routes by key)")
			os.Exit(2)
		}
		parts[*r.Key] = r.Partition
		msgs[i] = kafka.Message{
			Key:   bytesOf(r.Key),
			Value: bytesOf(r.Value),
			Time:  time.Unix(0, r.Timestamp*int64(time.Millisecond)),
		}
	}
	w := kafka.NewWriter(kafka.WriterConfig{
		Brokers:          strings.Split(s.Bootstrap, ","),
		Topic:            s.Topic,
		Dialer:           dialer,
		Balancer:         parts,
		MaxAttempts:      3,
		BatchTimeout:     time.Duration(s.LingerMs) * time.Millisecond,
		RequiredAcks:     -1,
		CompressionCodec: c,
	})
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	err := w.WriteMessages(ctx, msgs...)
	for _, r := range s.Records {
		ev := map[string]interface{}{
			"kind": "produced", "topic": s.Topic, "partition": r.Partition, "offset": nil,
			"key": r.Key, "value": r.Value, "headers": nil, "timestamp": r.Timestamp,
		}
		if err != nil {
			ev["error"] = err.Error()
		}
		emit(ev)
	}
	if cerr := w.Close(); cerr != nil {
		note("kafka-go writer close: %v", cerr)
	}
	if err != nil {
		note("kafka-go WriteMessages: %v", err)
		return 0
	}
	return len(msgs)
}

func consume(s *spec, dialer *kafka.Dialer, want int, deadline time.Time) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           strings.Split(s.Bootstrap, ","),
		GroupID:           s.Group,
		Topic:             s.Topic,
		Dialer:            dialer,
		MinBytes:          1,
		MaxBytes:          1 << 20,
		MaxWait:           300 * time.Millisecond,
		HeartbeatInterval: 500 * time.Millisecond,
		SessionTimeout:    6 * time.Second,
		RebalanceTimeout:  6 * time.Second,
	})
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var got []kafka.Message
	for len(got) < want {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			note("kafka-go FetchMessage: %v", err)
			break
		}
		got = append(got, m)
		emit(map[string]interface{}{
			"kind": "consumed", "topic": m.Topic, "partition": m.Partition, "offset": m.Offset,
			"key": strOf(m.Key), "value": strOf(m.Value), "headers": nil,
			"timestamp": m.Time.UnixNano() / int64(time.Millisecond),
		})
	}
	if len(got) < want {
		note("consumer got %d of %d records", len(got), want)
	}
	if len(got) > 0 {
		time.Sleep(1600 * time.Millisecond) // heartbeats after the last record, as the other scenarios
		if err := r.CommitMessages(ctx, got...); err != nil {
			note("kafka-go CommitMessages: %v", err)
		}
	}
	if err := r.Close(); err != nil {
		note("kafka-go reader close: %v", err)
	}
}

func main() {
	var s spec
	if err := json.NewDecoder(os.Stdin).Decode(&s); err != nil {
		fmt.Fprintf(os.Stderr, "bad spec on stdin: %v\n", err)
		os.Exit(2)
	}
	c, err := codec(s.Codec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	deadline := time.Now().Add(time.Duration(s.TimeoutMs) * time.Millisecond)
	dialer := &kafka.Dialer{ClientID: s.ClientID, Timeout: 5 * time.Second}
	if n := produce(&s, dialer, c, deadline); n > 0 {
		consume(&s, dialer, n, deadline)
	}
}
